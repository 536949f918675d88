import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The service serves the built dashboard from src/questline/dashboard/static at /ui/.
// Relative asset paths ('./assets/...') keep it working under /ui/ and under any
// prefix the service is mounted at.
const outDir = fileURLToPath(new URL('../src/questline/dashboard/static', import.meta.url));

export default defineConfig({
  base: './',
  build: {
    outDir,
    emptyOutDir: true,
    // Never inline assets as data: URLs: the Content-Security-Policy allows 'self' only.
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
  server: {
    // `npm run dev` talks to a service on :8000 (the real one or a mock).
    proxy: {
      '^/(team|leaderboard|discipline|member)': 'http://127.0.0.1:8000',
    },
  },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts'],
  },
});

// Token handling: the token lives in sessionStorage only, never in localStorage
// or a cookie, and arrives either pasted or in the URL fragment (#token=<JWT>).

export const TOKEN_KEY = 'questline.token';

export interface Claims {
  sub?: string;
  org?: string;
  role?: string;
  exp?: number;
  nbf?: number;
  [key: string]: unknown;
}

function base64UrlDecode(part: string): string {
  const b64 = part.replace(/-/g, '+').replace(/_/g, '/');
  const padded = b64 + '='.repeat((4 - (b64.length % 4)) % 4);
  const binary = atob(padded);
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** The payload of a JWT, unverified (the server verifies; this only steers the UI). */
export function decodeClaims(token: string): Claims | null {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return null;
  try {
    const payload: unknown = JSON.parse(base64UrlDecode(parts[1]));
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return null;
    return payload as Claims;
  } catch {
    return null;
  }
}

export function isAdminToken(token: string | null): boolean {
  if (!token) return false;
  return decodeClaims(token)?.role === 'admin';
}

export function isExpired(claims: Claims, nowMs: number = Date.now()): boolean {
  return typeof claims.exp === 'number' && claims.exp * 1000 <= nowMs;
}

/** A token carried in a fragment like `#token=<JWT>` (optionally `&...`), or null. */
export function tokenFromHash(hash: string): string | null {
  const raw = hash.startsWith('#') ? hash.slice(1) : hash;
  if (!raw.startsWith('token=')) return null;
  const params = new URLSearchParams(raw);
  const token = params.get('token')?.trim();
  return token ? token : null;
}

/** Cleans a pasted token: whitespace and an optional `Bearer ` prefix are dropped. */
export function normalizeToken(input: string): string {
  return input.trim().replace(/^bearer\s+/i, '').replace(/\s+/g, '');
}

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function clearToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/**
 * Moves a `#token=` fragment into sessionStorage and removes it from the URL
 * (and from history), so it is neither bookmarked nor shown. Returns true when
 * a token was taken.
 */
export function adoptTokenFromLocation(): boolean {
  const token = tokenFromHash(window.location.hash);
  if (!token) return false;
  setToken(token);
  const url = window.location.pathname + window.location.search + '#/leaderboard';
  window.history.replaceState(null, '', url);
  return true;
}

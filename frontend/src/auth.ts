// Sign-in: a one-time code from a sign-in link (`/ui/#code=…`, `questline signin-link`)
// or a token (`/ui/#token=…`, an identity provider's ID token) is exchanged once for
// the session cookie; nothing secret is kept in the page or in storage.

/** What a sign-in input or fragment carries. */
export type Credential = { Code: string } | { IdToken: string };

/** A credential in a fragment like `#code=…` or `#token=…` (optionally `&…`), or null. */
export function credentialFromHash(hash: string): Credential | null {
  const raw = hash.startsWith('#') ? hash.slice(1) : hash;
  if (!raw.startsWith('code=') && !raw.startsWith('token=')) return null;
  const params = new URLSearchParams(raw);
  const code = params.get('code')?.trim();
  if (code) return { Code: code };
  const token = params.get('token')?.trim();
  return token ? { IdToken: token } : null;
}

/**
 * What was pasted into the sign-in form: a whole sign-in link, a code, or a token
 * (a JWT: three dot-separated parts, optionally prefixed `Bearer `).
 */
export function credentialFromInput(input: string): Credential | null {
  const text = input.trim();
  if (!text) return null;
  const at = text.indexOf('#');
  if (at >= 0) return credentialFromHash(text.slice(at));
  const token = text.replace(/^bearer\s+/i, '').replace(/\s+/g, '');
  if (token.split('.').length === 3) return { IdToken: token };
  if (/^[A-Za-z0-9_-]{16,}$/.test(token)) return { Code: token };
  return null;
}

/** Takes a credential out of the URL (and history) so it is neither bookmarked nor shown. */
export function takeCredentialFromLocation(): Credential | null {
  const credential = credentialFromHash(window.location.hash);
  if (!credential) return null;
  const url = window.location.pathname + window.location.search + '#/leaderboard';
  window.history.replaceState(null, '', url);
  return credential;
}

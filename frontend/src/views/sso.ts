// Single sign-on on the sign-in page: "Sign in with your organization" for an
// organization whose OpenID provider is configured (`/organization/sso`), the reason a
// login through the provider was refused, and, after signing out of a session that the
// provider started, the offer to sign out there too (RP-initiated logout).
//
// The organization comes from the link (`/ui/#/signin?org=<id>`), else from this
// browser's last SSO sign-in, else the page asks for it.

import { ApiError, type Api } from '../api';
import { h } from '../dom';
import type { ProviderLogout, SsoAvailability } from '../types';

const ORG_KEY = 'questline-sso-organization';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What the service's `sso-error` codes mean to the person who was sent back. */
export const SSO_ERRORS: Readonly<Record<string, string>> = {
  'not-configured': 'This organization does not offer single sign-on (or has turned it off). Use a sign-in link instead.',
  'provider-unreachable': 'Your organization’s sign-in service cannot be reached right now. Try again in a moment.',
  state: 'That sign-in took too long or was already used. Start again.',
  browser: 'That sign-in was started in another browser. Start again here.',
  'provider-error': 'Your organization’s sign-in service did not sign you in (cancelled or refused).',
  token: 'Your organization’s sign-in service did not confirm the sign-in. Start again.',
  signature: 'The sign-in could not be verified (unknown signature). Ask your admin to check the single sign-on settings.',
  issuer: 'The sign-in came from another sign-in service than your organization’s.',
  audience: 'The sign-in was meant for another application. Ask your admin to check the single sign-on settings.',
  expired: 'The sign-in had expired by the time it arrived. Check this computer’s clock and start again.',
  nonce: 'The sign-in did not belong to this attempt. Start again.',
  'invalid-token': 'Your organization’s sign-in service sent an unreadable answer.',
  'email-unverified': 'Your e-mail address is not verified at your organization’s sign-in service.',
  'email-domain': 'Your e-mail address is not of a domain this organization accepts. Ask your admin.',
  'email-missing': 'Your organization’s sign-in service did not share a usable e-mail address.',
  deactivated: 'Your organization’s directory has deactivated your account here. Ask your admin.',
  'not-provisioned': 'Your organization’s directory has not given you an account here (yet). Ask your admin.',
  misconfigured: 'Single sign-on is not set up correctly: ask your admin to save its settings again.',
  'rate-limited': 'Too many sign-ins from your network just now. Wait a minute, then start again.',
};

export function ssoErrorMessage(code: string): string {
  return SSO_ERRORS[code] ?? 'Single sign-on did not complete. Start again.';
}

/** `org` and `sso-error` of a sign-in link (`#/signin?org=…&sso-error=…`). */
export function ssoParams(hash: string): { org: string | null; error: string | null } {
  const at = hash.indexOf('?');
  const params = new URLSearchParams(at >= 0 ? hash.slice(at + 1) : '');
  const org = params.get('org')?.trim() ?? null;
  return { org: org && UUID.test(org) ? org.toLowerCase() : null, error: params.get('sso-error') };
}

/** The refusal message of the link, once: the code is taken out of the address bar. */
export function takeSsoError(): string | null {
  const { org, error } = ssoParams(window.location.hash);
  if (!error) return null;
  const hash = org ? `#/signin?org=${org}` : '#/signin';
  window.history.replaceState(null, '', window.location.pathname + window.location.search + hash);
  return ssoErrorMessage(error);
}

let providerLogout: string | null = null;

/** Before signing out: where the provider ends its own session, if this one is its. */
export async function rememberProviderLogout(api: Api): Promise<void> {
  try {
    providerLogout = (await api.request<ProviderLogout>('GET', '/auth/oidc/session')).data.EndSessionUrl ?? null;
  } catch {
    providerLogout = null;
  }
}

function rememberedOrg(): string | null {
  try {
    const org = window.localStorage.getItem(ORG_KEY);
    return org && UUID.test(org) ? org : null;
  } catch {
    return null;
  }
}

function rememberOrg(org: string): void {
  try {
    window.localStorage.setItem(ORG_KEY, org);
  } catch {
    /* private mode: asked again next time */
  }
}

/** Where to come back to: the page the person was on, unless it was the sign-in page. */
function nextPath(): string {
  const hash = window.location.hash;
  return hash && !hash.startsWith('#/signin') ? `/ui/${hash}` : '/ui/';
}

async function availability(api: Api, org: string): Promise<SsoAvailability | null> {
  try {
    return (await api.request<SsoAvailability>('GET', `/auth/oidc/${encodeURIComponent(org)}`)).data;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

/** The "Sign in with your organization" card of the sign-in page. */
export function renderSsoSignIn(api: Api): HTMLElement {
  const card = h('section', { class: 'card form', 'aria-labelledby': 'sso-heading', 'data-testid': 'sso-card' });
  const body = h('div', { 'aria-live': 'polite' });
  card.append(h('h2', { id: 'sso-heading', class: 'h3' }, 'Single sign-on'), body);

  if (providerLogout) {
    const url = providerLogout;
    providerLogout = null;
    card.prepend(
      h(
        'p',
        { class: 'notice', 'data-testid': 'provider-logout' },
        'You are signed out of Questline. ',
        h('a', { href: url, 'data-testid': 'provider-logout-link' }, 'Also sign out of your organization’s account'),
        '.',
      ),
    );
  }

  const loginHref = (org: string): string => api.url(`/auth/oidc/${encodeURIComponent(org)}/login`, { next: nextPath() });

  const offer = (org: string): void => {
    body.replaceChildren(
      h('a', { href: loginHref(org), class: 'button-link primary', 'data-testid': 'sso-button' }, 'Sign in with your organization'),
      h(
        'p',
        { class: 'muted small' },
        'You sign in at your organization’s own sign-in page and come back here. ',
        h('button', { type: 'button', class: 'small', onclick: () => ask(null) }, 'Another organization?'),
      ),
    );
  };

  const ask = (message: string | null): void => {
    const input = h('input', {
      id: 'sso-org-input',
      name: 'organization',
      type: 'text',
      autocomplete: 'organization',
      spellcheck: 'false',
      required: true,
      'aria-describedby': 'sso-org-help',
      'data-testid': 'sso-org-input',
    });
    const status = h('p', { id: 'sso-org-help', class: 'muted small' }, message ?? 'Your organization’s id, as in the link your admin shared (…/ui/#/signin?org=<id>).');
    const form = h(
      'form',
      { class: 'form', novalidate: true, 'data-testid': 'sso-org-form' },
      h('label', { for: 'sso-org-input' }, 'Organization id'),
      input,
      status,
      h('button', { type: 'submit', 'data-testid': 'sso-continue' }, 'Continue'),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const org = input.value.trim().toLowerCase();
      if (!UUID.test(org)) {
        input.setAttribute('aria-invalid', 'true');
        status.textContent = 'That is not an organization id (it looks like 0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b10).';
        return;
      }
      void availability(api, org).then(
        (found) => {
          if (!found) {
            input.setAttribute('aria-invalid', 'true');
            status.textContent = 'This organization does not offer single sign-on. Use a sign-in link instead.';
            return;
          }
          rememberOrg(org);
          window.location.assign(loginHref(org));
        },
        () => {
          status.textContent = 'Cannot reach the Questline service. Check your connection and try again.';
        },
      );
    });
    body.replaceChildren(form);
  };

  const linked = ssoParams(window.location.hash).org;
  const org = linked ?? rememberedOrg();
  if (!org) {
    ask(null);
    return card;
  }
  body.replaceChildren(h('p', { class: 'muted small' }, 'Looking up your organization’s sign-in…'));
  void availability(api, org).then(
    (found) => {
      if (found) {
        rememberOrg(org);
        offer(org);
      } else {
        ask(linked ? 'This organization does not offer single sign-on. Use a sign-in link, or enter another organization id.' : null);
      }
    },
    () => ask(null),
  );
  return card;
}

// Single sign-on settings (admins): the organization's OpenID provider
// (`GET/PUT/DELETE /organization/sso`). The service fetches the provider when saved and
// says why when it cannot use it; the client secret is write-only.

import { ApiError } from '../api';
import { busy, handleError, type Ctx } from '../context';
import { h, replaceChildren } from '../dom';
import type { SsoConfiguration, SsoConfigurationPut } from '../types';
import { copyButton } from './copy';

function list(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean);
}

function field(id: string, label: string, input: HTMLElement, help?: string): HTMLElement {
  return h('div', { class: 'field wide' }, h('label', { for: id }, label), input, help ? h('p', { id: `${id}-help`, class: 'muted small' }, help) : null);
}

export function renderSsoSettings(ctx: Ctx): void {
  const input = (id: string, name: string, attrs: Record<string, string | boolean> = {}): HTMLInputElement =>
    h('input', { id, name, type: 'text', autocomplete: 'off', spellcheck: 'false', 'data-testid': id, ...attrs });
  const issuer = input('sso-issuer', 'Issuer', { type: 'url', required: true, placeholder: 'https://sso.example.org/realms/acme' });
  const clientId = input('sso-client-id', 'ClientId', { required: true });
  const secret = input('sso-client-secret', 'ClientSecret', { type: 'password', autocomplete: 'new-password' });
  const adminGroups = input('sso-admin-groups', 'AdminGroups', { placeholder: 'questline-admins' });
  const groupsClaim = input('sso-groups-claim', 'GroupsClaim', { value: 'groups' });
  const domains = input('sso-domains', 'AllowedEmailDomains', { placeholder: 'example.org' });
  const enabled = h('input', { id: 'sso-enabled', name: 'Enabled', type: 'checkbox', checked: true, 'data-testid': 'sso-enabled' });
  const remove = h('button', { type: 'button', class: 'danger', hidden: true, 'data-testid': 'sso-remove' }, 'Remove single sign-on');
  const form = h(
    'form',
    { class: 'card form', novalidate: true, 'data-testid': 'sso-settings-form' },
    field('sso-issuer', 'Issuer URL', issuer, 'As the provider names it; the service reads <Issuer>/.well-known/openid-configuration.'),
    field('sso-client-id', 'Client id', clientId),
    field('sso-client-secret', 'Client secret', secret, 'Stored encrypted and never shown again. A new issuer or client id needs its own secret.'),
    field('sso-admin-groups', 'Admin groups (comma-separated)', adminGroups, 'People in one of these groups sign in as admins; everyone else as members.'),
    field('sso-groups-claim', 'Groups claim', groupsClaim),
    field('sso-domains', 'Allowed e-mail domains (comma-separated)', domains, 'When set, only verified addresses of these domains sign in; empty: any verified address.'),
    h('div', { class: 'check' }, enabled, h('label', { for: 'sso-enabled' }, 'Enabled')),
    h('div', { class: 'actions-row' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'sso-save' }, 'Save'), remove),
  );
  const facts = h('section', { 'aria-live': 'polite', 'data-testid': 'sso-facts' });

  replaceChildren(
    ctx.view,
    h('h1', { tabindex: -1 }, 'Single sign-on'),
    h('p', null, 'Let people sign in with your organization’s OpenID Connect provider (Keycloak, Entra ID, Okta, …). docs/identity.md walks through a Keycloak setup.'),
    facts,
    form,
  );

  const show = (config: SsoConfiguration | null): void => {
    remove.hidden = config === null;
    secret.placeholder = config?.ClientSecretSet ? 'Stored: leave empty to keep it' : '';
    if (!config) {
      replaceChildren(facts);
      return;
    }
    issuer.value = config.Issuer;
    clientId.value = config.ClientId;
    adminGroups.value = config.AdminGroups.join(', ');
    groupsClaim.value = config.GroupsClaim;
    domains.value = config.AllowedEmailDomains.join(', ');
    enabled.checked = config.Enabled;
    const link = `${window.location.origin}${window.location.pathname}#/signin?org=${config.OrganizationId}`;
    const redirect = h('code', { 'data-testid': 'sso-redirect-uri' }, config.RedirectUri);
    const signinLink = h('code', { 'data-testid': 'sso-signin-link' }, link);
    replaceChildren(
      facts,
      h(
        'dl',
        { class: 'card' },
        h('dt', null, 'Redirect URI to register at the provider'),
        h('dd', null, redirect, ' ', copyButton(ctx, 'redirect URI', redirect, 'sso-copy-redirect-uri')),
        h('dt', null, 'Sign-in link to hand out'),
        h('dd', null, signinLink, ' ', copyButton(ctx, 'sign-in link', signinLink, 'sso-copy-signin-link')),
      ),
    );
  };

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body: SsoConfigurationPut = {
      Issuer: issuer.value.trim(),
      ClientId: clientId.value.trim(),
      AdminGroups: list(adminGroups.value),
      GroupsClaim: groupsClaim.value.trim() || 'groups',
      AllowedEmailDomains: list(domains.value),
      Enabled: enabled.checked,
    };
    if (secret.value) body.ClientSecret = secret.value;
    void busy(form, async () => {
      try {
        const saved = (await ctx.api.request<SsoConfiguration>('PUT', '/organization/sso', body)).data;
        secret.value = '';
        show(saved);
        ctx.notify('Single sign-on saved: the provider answered.');
      } catch (err) {
        handleError(ctx, err, form);
      }
    });
  });

  remove.addEventListener('click', () => {
    if (!window.confirm('Remove single sign-on? People can no longer sign in through the provider.')) return;
    void busy(remove, async () => {
      try {
        await ctx.api.request('DELETE', '/organization/sso');
        form.reset();
        show(null);
        ctx.notify('Single sign-on removed.');
      } catch (err) {
        handleError(ctx, err);
      }
    });
  });

  void (async () => {
    try {
      const config = (await ctx.api.request<SsoConfiguration>('GET', '/organization/sso')).data;
      if (ctx.isCurrent()) show(config);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) show(null);
      else handleError(ctx, err);
    }
  })();
}

import { h } from '../dom';
import { busy, handleError, type Ctx } from '../context';
import { formatDateTime } from '../format';
import { copyButton } from './copy';

/** What `POST /organization/scim-token` answers (shown once). */
export interface ScimToken {
  Token: string;
  BaseUrl: string;
  ExpiresAt: string;
}

/**
 * Admins only: mint the organization's SCIM token for its directory (Okta, Entra ID,
 * Keycloak…) and show it once with the base URL to paste into the directory.
 */
export function scimPanel(ctx: Ctx): HTMLElement {
  const days = h('input', { id: 'scim-days', type: 'number', min: 1, max: 3650, value: 365, required: true, 'data-testid': 'scim-days' });
  const result = h('div', { 'data-testid': 'scim-token-result', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Directory provisioning token', 'data-testid': 'scim-token-form' },
    h('div', { class: 'field' }, h('label', { for: 'scim-days' }, 'Valid for (days)'), days),
    h('button', { type: 'submit', 'data-testid': 'scim-token-create' }, 'Create SCIM token'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void busy(form, async () => {
      try {
        const minted = (await ctx.api.request<ScimToken>('POST', '/organization/scim-token', { Days: Number(days.value) })).data;
        if (!ctx.isCurrent()) return;
        const baseUrl = h('code', { 'data-testid': 'scim-base-url' }, minted.BaseUrl);
        const token = h('textarea', { readonly: true, rows: 3, cols: 60, 'aria-label': 'SCIM token', 'data-testid': 'scim-token' }, minted.Token);
        result.replaceChildren(
          h('p', null, 'Give these to your directory (shown once; create a new token to rotate):'),
          h('dl', null,
            h('dt', null, 'SCIM base URL (the tenant URL)'), h('dd', null, baseUrl, ' ', copyButton(ctx, 'SCIM base URL', baseUrl, 'scim-copy-base-url')),
            h('dt', null, 'Bearer token (the secret token)'), h('dd', null, token, ' ', copyButton(ctx, 'SCIM token', token, 'scim-copy-token')),
            h('dt', null, 'Expires'), h('dd', null, formatDateTime(minted.ExpiresAt)),
          ),
        );
      } catch (err) {
        handleError(ctx, err, form);
      }
    });
  });
  return h(
    'section',
    { 'aria-labelledby': 'scim-heading', 'data-testid': 'scim-panel' },
    h('h2', { id: 'scim-heading' }, 'Directory provisioning (SCIM)'),
    h('p', { class: 'muted' }, 'Let your identity provider create, update and deactivate members and keep teams in step with its groups. See docs/identity.md.'),
    form,
    result,
  );
}

// "E-mail me a link" on the sign-in page: a member asks for a one-time sign-in link by
// e-mail (POST /auth/signin-link). The answer is the same whether or not the address
// is a member's, so the page says so rather than "sent".

import { Api, ApiError } from '../api';
import { showError, notify } from '../context';
import { h } from '../dom';
import { describeProblem } from '../format';
import { ssoParams } from './sso';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The organization a link to the page names (`/ui/?org=<id>`), or ''. */
export function organizationFromSearch(search: string): string {
  const org = new URLSearchParams(search).get('org')?.trim() ?? '';
  return UUID.test(org) ? org.toLowerCase() : '';
}

/** The form: organization (from the page's link when it names one: `/ui/?org=<id>`, or
 * the `#/signin?org=<id>` link an admin hands out for single sign-on) and e-mail address. */
export function emailLinkForm(api: Api = new Api()): HTMLFormElement {
  const known = organizationFromSearch(window.location.search) || (ssoParams(window.location.hash).org ?? '');
  const org = h('input', {
    id: 'email-link-org',
    name: 'OrganizationId',
    type: known ? 'hidden' : 'text',
    value: known,
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: '0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b10',
    'aria-describedby': 'email-link-help',
    'data-testid': 'email-link-org',
  });
  const email = h('input', {
    id: 'email-link-email',
    name: 'Email',
    type: 'email',
    required: true,
    autocomplete: 'email',
    'data-testid': 'email-link-email',
  });
  const form = h(
    'form',
    { id: 'email-link-form', class: 'card form', 'data-testid': 'email-link-form', novalidate: true, 'aria-labelledby': 'email-link-heading' },
    h('h2', { id: 'email-link-heading' }, 'E-mail me a link'),
    known ? org : h('div', { class: 'field' }, h('label', { for: 'email-link-org' }, 'Organization id'), org),
    h('div', { class: 'field' }, h('label', { for: 'email-link-email' }, 'Your e-mail address'), email),
    h(
      'p',
      { id: 'email-link-help', class: 'muted small' },
      'Members of an organization get a one-time sign-in link by e-mail. ',
      known ? '' : 'Your organization’s id is in the links your admin sends (…/ui/?org=<id>). ',
    ),
    h('button', { type: 'submit', id: 'email-link-button', 'data-testid': 'email-link-button' }, 'E-mail me a link'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void ask();
  });

  async function ask(): Promise<void> {
    const orgId = org.value.trim().toLowerCase();
    if (!UUID.test(orgId)) {
      org.setAttribute('aria-invalid', 'true');
      showError(new Error('Enter your organization’s id (a UUID like 0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b10).'));
      if (!known) org.focus();
      return;
    }
    if (!email.value.trim() || !email.checkValidity()) {
      email.setAttribute('aria-invalid', 'true');
      showError(new Error('Enter your e-mail address.'));
      email.focus();
      return;
    }
    org.removeAttribute('aria-invalid');
    email.removeAttribute('aria-invalid');
    const button = form.querySelector('button');
    if (button) button.disabled = true;
    try {
      await api.request('POST', '/auth/signin-link', { OrganizationId: orgId, Email: email.value.trim() });
      form.dataset['sent'] = 'true';
      notify(`If ${email.value.trim()} belongs to a member of the organization, a sign-in link is on its way. It works once, for a short while.`);
    } catch (err) {
      if (err instanceof ApiError) showError(new Error(describeProblem(err.status, err.problem, err.message, err.retryAfter).summary));
      else showError(err);
    } finally {
      if (button) button.disabled = false;
    }
  }

  return form;
}

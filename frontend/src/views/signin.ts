import { credentialFromInput, type Credential } from '../auth';
import { h } from '../dom';
import { showError } from '../context';
import { emailLinkForm } from './email-link';

/**
 * The sign-in form: paste a sign-in link (or its code), or a token. It is exchanged
 * once for the session cookie; `onCredential` resolves to an error message or null.
 */
export function renderSignIn(view: HTMLElement, message: string | null, onCredential: (c: Credential) => Promise<string | null>): void {
  const input = h('input', {
    id: 'token-input',
    name: 'credential',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    autocapitalize: 'off',
    required: true,
    'aria-describedby': 'token-help',
    'data-testid': 'token-input',
  });
  const form = h(
    'form',
    { id: 'signin-form', class: 'card form', 'data-testid': 'signin-form', novalidate: true },
    h('label', { for: 'token-input' }, 'Sign-in link, code or token'),
    input,
    h(
      'p',
      { id: 'token-help', class: 'muted small' },
      'Open the link from ',
      h('code', null, 'questline signin-link'),
      ' (or ',
      h('code', null, 'questline demo'),
      '), or paste it here. A link works once; the session then lasts in every tab of this browser until you sign out or it expires.',
    ),
    h('button', { id: 'signin-button', type: 'submit', class: 'primary', 'data-testid': 'signin-button' }, 'Sign in'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void signIn();
  });

  async function signIn(): Promise<void> {
    const credential = credentialFromInput(input.value);
    if (!credential) {
      input.setAttribute('aria-invalid', 'true');
      showError(new Error('That is neither a sign-in link nor a token. Paste the whole link that questline signin-link printed.'));
      input.focus();
      return;
    }
    const button = form.querySelector('button');
    if (button) button.disabled = true;
    try {
      const failed = await onCredential(credential);
      if (failed) {
        input.setAttribute('aria-invalid', 'true');
        showError(new Error(failed));
        input.focus();
      }
    } finally {
      if (button) button.disabled = false;
    }
  }

  view.replaceChildren(
    h('h1', { tabindex: -1 }, 'Sign in'),
    h('p', null, 'The Questline dashboard shows your organization’s leaderboard, progress graphs, teams and disciplines.'),
    form,
    emailLinkForm(),
  );
  if (message) showError(new Error(message));
}

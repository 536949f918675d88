import { ApiError, Api } from '../api';
import { decodeClaims, isExpired, normalizeToken, setToken, clearToken } from '../auth';
import { h } from '../dom';
import { showError } from '../context';

/** The sign-in form: paste a token; it is checked against the API before it is kept. */
export function renderSignIn(view: HTMLElement, message: string | null, onSignedIn: () => void): void {
  const input = h('input', {
    id: 'token-input',
    name: 'token',
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
    h('label', { for: 'token-input' }, 'Access token'),
    input,
    h(
      'p',
      { id: 'token-help', class: 'muted small' },
      'Paste a token from ',
      h('code', null, 'questline token create'),
      ' or ',
      h('code', null, 'questline demo'),
      '. It is kept in this browser tab only (sessionStorage) and forgotten when the tab closes.',
    ),
    h('button', { id: 'signin-button', type: 'submit', class: 'primary', 'data-testid': 'signin-button' }, 'Sign in'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void signIn();
  });

  async function signIn(): Promise<void> {
    const token = normalizeToken(input.value);
    const claims = token ? decodeClaims(token) : null;
    if (!claims) {
      input.setAttribute('aria-invalid', 'true');
      showError(new Error('That is not a token: a token (JWT) is three parts separated by dots, like xxxxx.yyyyy.zzzzz.'));
      input.focus();
      return;
    }
    if (isExpired(claims)) {
      input.setAttribute('aria-invalid', 'true');
      showError(new Error('This token has expired. Ask for a new one.'));
      input.focus();
      return;
    }
    const button = form.querySelector('button');
    if (button) button.disabled = true;
    try {
      // Any read will do to learn whether the service accepts the token.
      await new Api(() => token).teams();
      setToken(token);
      onSignedIn();
    } catch (err) {
      clearToken();
      input.setAttribute('aria-invalid', 'true');
      if (err instanceof ApiError && err.status === 401) {
        showError(new Error('The service did not accept this token (invalid, expired, or for another service).'));
      } else {
        showError(err);
      }
      input.focus();
    } finally {
      if (button) button.disabled = false;
    }
  }

  view.replaceChildren(
    h('h1', { tabindex: -1 }, 'Sign in'),
    h('p', null, 'The Questline dashboard shows your organization’s leaderboard, progress graphs, teams and disciplines.'),
    form,
  );
  if (message) showError(new Error(message));
}

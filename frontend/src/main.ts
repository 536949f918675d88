// Questline dashboard: entry point, layout and hash routing.
import './style.css';
import { Api } from './api';
import { adoptTokenFromLocation, clearToken, decodeClaims, getToken, isAdminToken, isExpired } from './auth';
import { clearMessages, createDisciplineCache, notify, showError, type Ctx } from './context';
import { h } from './dom';
import { parseRoute, type RouteName } from './router';
import { renderDiscipline, renderDisciplines } from './views/disciplines';
import { renderGraph } from './views/graph';
import { renderLeaderboard } from './views/leaderboard';
import { renderSignIn } from './views/signin';
import { renderTeam } from './views/team';
import { renderTeams } from './views/teams';

const TITLES: Record<RouteName, string> = {
  leaderboard: 'Leaderboard',
  graph: 'Progress graph',
  teams: 'Teams',
  team: 'Team',
  disciplines: 'Disciplines',
  discipline: 'Discipline',
  signin: 'Sign in',
  notfound: 'Not found',
};

const view = document.getElementById('view') as HTMLElement;
const sessionBox = document.getElementById('session') as HTMLElement;
const api = new Api(getToken);
let disciplines = createDisciplineCache(api);
let generation = 0;
let cleanups: (() => void)[] = [];
let firstRender = true;

function renderSession(): void {
  const token = getToken();
  const claims = token ? decodeClaims(token) : null;
  if (!token) {
    sessionBox.replaceChildren(h('a', { href: '#/signin', id: 'signin-link' }, 'Sign in'));
    return;
  }
  const who = claims?.sub ? String(claims.sub) : 'signed in';
  sessionBox.replaceChildren(
    h('span', { class: 'who', 'data-testid': 'session-user' }, who, ' ', h('span', { class: 'badge', 'data-testid': 'session-role' }, String(claims?.role ?? 'unknown'))),
    h('button', { type: 'button', id: 'signout-button', 'data-testid': 'signout-button', onclick: () => signOut(null) }, 'Sign out'),
  );
}

function signOut(message: string | null): void {
  clearToken();
  disciplines = createDisciplineCache(api);
  render(message);
}

function render(signInMessage: string | null = null): void {
  for (const fn of cleanups) {
    try {
      fn();
    } catch {
      /* a view's cleanup must not stop the next view */
    }
  }
  cleanups = [];
  const mine = ++generation;
  clearMessages();
  renderSession();

  let route = parseRoute(window.location.hash);
  const token = getToken();
  const claims = token ? decodeClaims(token) : null;
  if (token && (!claims || isExpired(claims))) {
    clearToken();
    renderSession();
    signInMessage = 'Your token has expired. Sign in again.';
  }
  const signedIn = getToken() !== null;
  if (!signedIn) route = { name: 'signin', id: null };
  else if (route.name === 'signin') {
    window.location.replace('#/leaderboard');
    return;
  }

  for (const a of document.querySelectorAll<HTMLAnchorElement>('#nav a[data-route]')) {
    const active = a.dataset['route'] === route.name || (a.dataset['route'] === 'teams' && route.name === 'team') || (a.dataset['route'] === 'disciplines' && route.name === 'discipline');
    if (active) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${TITLES[route.name]} · Questline`;
  view.dataset['route'] = route.name;

  const ctx: Ctx = {
    api,
    admin: isAdminToken(getToken()),
    view,
    isCurrent: () => mine === generation,
    onCleanup: (fn) => cleanups.push(fn),
    showError: (err, form) => {
      if (mine === generation) showError(err, form);
    },
    notify: (message) => {
      if (mine === generation) notify(message);
    },
    clearMessages,
    disciplines: () => disciplines(),
    signedOut: (message) => {
      if (mine === generation) signOut(message);
    },
  };

  switch (route.name) {
    case 'signin':
      renderSignIn(view, signInMessage, () => {
        disciplines = createDisciplineCache(api);
        if (parseRoute(window.location.hash).name === 'signin') window.location.hash = '#/leaderboard';
        else render();
      });
      break;
    case 'leaderboard':
      renderLeaderboard(ctx);
      break;
    case 'graph':
      renderGraph(ctx);
      break;
    case 'teams':
      renderTeams(ctx);
      break;
    case 'team':
      renderTeam(ctx, route.id ?? '');
      break;
    case 'disciplines':
      renderDisciplines(ctx);
      break;
    case 'discipline':
      renderDiscipline(ctx, route.id ?? '');
      break;
    case 'notfound':
      view.replaceChildren(
        h('h1', { tabindex: -1 }, 'Page not found'),
        h('p', null, 'There is no such page. ', h('a', { href: '#/leaderboard' }, 'Go to the leaderboard'), '.'),
      );
      break;
  }

  // After a navigation, move focus to the new page's heading (screen readers
  // announce it; keyboard users continue from the top of the content).
  if (!firstRender) view.querySelector<HTMLElement>('h1')?.focus();
  else if (route.name === 'signin') document.getElementById('token-input')?.focus();
  firstRender = false;
}

// The skip link targets #main, which a hash router would take as a route.
document.querySelector('.skip-link')?.addEventListener('click', (ev) => {
  ev.preventDefault();
  (document.getElementById('main') as HTMLElement).focus();
});

window.addEventListener('hashchange', () => {
  if (adoptTokenFromLocation()) {
    disciplines = createDisciplineCache(api);
  }
  render();
});
// Another tab signing out does not share sessionStorage; nothing to sync.

adoptTokenFromLocation();
render();

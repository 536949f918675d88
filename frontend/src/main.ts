// Questline dashboard: entry point, layout, session and hash routing.
import './style.css';
import { Api, ApiError } from './api';
import { takeCredentialFromLocation, type Credential } from './auth';
import { clearMessages, createDisciplineCache, notify, showError, takeFlash, type Ctx } from './context';
import { h } from './dom';
import { describeProblem } from './format';
import { parseRoute, type RouteName } from './router';
import type { SessionInfo } from './types';
import { renderAudit } from './views/audit';
import { renderReview } from './views/review';
import { renderMyTeam } from './views/myteam';
import { landingRoute } from './learner';
import { renderSeasons } from './views/seasons';
import { renderDiscipline, renderDisciplines } from './views/disciplines';
import { renderDisciplineEditor } from './views/editor';
import { renderGraph } from './views/graph';
import { renderLeaderboard } from './views/leaderboard';
import { renderMembers } from './views/members';
import { renderOnboarding } from './views/onboarding';
import { renderSignIn } from './views/signin';
import { rememberProviderLogout, renderSsoSignIn, takeSsoError } from './views/sso';
import { renderSsoSettings } from './views/sso-settings';
import { renderTeam } from './views/team/index';
import { renderTeams } from './views/teams';

const TITLES: Record<RouteName, string> = {
  leaderboard: 'Leaderboard',
  graph: 'Progress graph',
  teams: 'Teams',
  team: 'Team',
  members: 'Members',
  onboarding: 'Onboarding',
  disciplines: 'Disciplines',
  discipline: 'Discipline',
  'discipline-edit': 'Edit discipline',
  'discipline-new': 'New discipline',
  signin: 'Sign in',
  notfound: 'Not found',
  sso: 'Single sign-on',
  seasons: 'Seasons',
  audit: 'Audit log',
  review: 'Review',
  myteam: 'My team',
};
const ADMIN_ONLY: ReadonlySet<RouteName> = new Set(['onboarding', 'discipline-edit', 'discipline-new', 'sso', 'seasons', 'audit', 'review']);

const view = document.getElementById('view') as HTMLElement;
const sessionBox = document.getElementById('session') as HTMLElement;
const api = new Api();
let session: SessionInfo | null = null;
let disciplines = createDisciplineCache(api);
let generation = 0;
let cleanups: (() => void)[] = [];
let firstRender = true;
// Other tabs of this browser share the cookie: tell them when this one signs in or out.
const channel = 'BroadcastChannel' in window ? new BroadcastChannel('questline-session') : null;

function renderSession(): void {
  if (!session) {
    sessionBox.replaceChildren(h('a', { href: '#/signin', id: 'signin-link' }, 'Sign in'));
    return;
  }
  sessionBox.replaceChildren(
    h(
      'span',
      { class: 'who', 'data-testid': 'session-user' },
      session.Subject,
      ' ',
      h('span', { class: 'badge', 'data-testid': 'session-role' }, session.Role),
    ),
    h('button', { type: 'button', id: 'signout-button', 'data-testid': 'signout-button', onclick: () => void signOut() }, 'Sign out'),
  );
}

function renderNav(): void {
  for (const li of document.querySelectorAll<HTMLElement>('#nav li[data-admin]')) {
    li.hidden = session?.Role !== 'admin';
  }
  for (const li of document.querySelectorAll<HTMLElement>('#nav li[data-mine]')) {
    li.hidden = !session?.TeamIds?.length;
  }
}

async function signOut(): Promise<void> {
  await rememberProviderLogout(api); // before the session ends: offered on the sign-in page
  try {
    await api.signOut();
  } catch {
    /* the session may be over already: either way this tab is signed out */
  }
  channel?.postMessage('signed-out');
  dropSession(null);
}

function dropSession(message: string | null): void {
  session = null;
  api.csrf = null;
  disciplines = createDisciplineCache(api);
  render(message);
}

async function exchange(credential: Credential): Promise<string | null> {
  try {
    session = await api.signIn(credential);
    disciplines = createDisciplineCache(api);
    channel?.postMessage('signed-in');
    return null;
  } catch (err) {
    if (err instanceof ApiError) return describeProblem(err.status, err.problem, err.message).summary;
    return err instanceof Error ? err.message : String(err);
  }
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
  const flash = takeFlash();
  if (flash) notify(flash);
  renderSession();
  renderNav();

  let route = parseRoute(window.location.hash);
  if (!session) route = { name: 'signin', id: null };
  else if (route.name === 'signin') {
    window.location.replace(landingRoute(session.Role, session.TeamIds));
    return;
  }
  const forbidden = session !== null && session.Role !== 'admin' && ADMIN_ONLY.has(route.name);

  for (const a of document.querySelectorAll<HTMLAnchorElement>('#nav a[data-route]')) {
    const r = a.dataset['route'];
    const active =
      r === route.name ||
      (r === 'teams' && route.name === 'team') ||
      (r === 'disciplines' && route.name.startsWith('discipline'));
    if (active) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${TITLES[route.name]} · Questline`;
  view.dataset['route'] = route.name;

  const current = session;
  if (!current || route.name === 'signin') {
    renderSignIn(view, signInMessage ?? takeSsoError(), async (credential) => {
      const failed = await exchange(credential);
      if (failed) return failed;
      if (parseRoute(window.location.hash).name === 'signin') window.location.hash = session ? landingRoute(session.Role, session.TeamIds) : '#/leaderboard';
      else render();
      return null;
    });
    view.insertBefore(renderSsoSignIn(api), view.querySelector('#signin-form'));
    if (firstRender) document.getElementById('token-input')?.focus();
    firstRender = false;
    return;
  }

  const ctx: Ctx = {
    api,
    admin: current.Role === 'admin',
    session: current,
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
    refreshDisciplines: () => {
      disciplines = createDisciplineCache(api);
    },
    signedOut: (message) => {
      if (mine === generation) dropSession(message);
    },
  };

  if (forbidden) {
    view.replaceChildren(
      h('h1', { tabindex: -1 }, TITLES[route.name]),
      h('p', null, 'This page is for admins: your role is read-only. ', h('a', { href: '#/leaderboard' }, 'Go to the leaderboard'), '.'),
    );
  } else {
    switch (route.name) {
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
      case 'members':
        renderMembers(ctx);
        break;
      case 'onboarding':
        renderOnboarding(ctx);
        break;
      case 'disciplines':
        renderDisciplines(ctx);
        break;
      case 'discipline':
        renderDiscipline(ctx, route.id ?? '');
        break;
      case 'discipline-edit':
        renderDisciplineEditor(ctx, route.id);
        break;
      case 'discipline-new':
        renderDisciplineEditor(ctx, null);
        break;
      case 'sso':
        renderSsoSettings(ctx);
        break;
      case 'seasons':
        renderSeasons(ctx);
        break;
      case 'audit':
        renderAudit(ctx);
        break;
      case 'review':
        renderReview(ctx);
        break;
      case 'myteam':
        renderMyTeam(ctx);
        break;
      case 'notfound':
        view.replaceChildren(
          h('h1', { tabindex: -1 }, 'Page not found'),
          h('p', null, 'There is no such page. ', h('a', { href: '#/leaderboard' }, 'Go to the leaderboard'), '.'),
        );
        break;
    }
  }

  // After a navigation, move focus to the new page's heading (screen readers
  // announce it; keyboard users continue from the top of the content).
  if (!firstRender) view.querySelector<HTMLElement>('h1')?.focus();
  firstRender = false;
}

// The skip link targets #main, which a hash router would take as a route.
document.querySelector('.skip-link')?.addEventListener('click', (ev) => {
  ev.preventDefault();
  (document.getElementById('main') as HTMLElement).focus();
});

window.addEventListener('hashchange', () => {
  const credential = takeCredentialFromLocation();
  if (credential) {
    void exchange(credential).then((failed) => {
      if (session) window.history.replaceState(null, '', window.location.pathname + window.location.search + landingRoute(session.Role, session.TeamIds));
      render(failed);
    });
    return;
  }
  render();
});

channel?.addEventListener('message', (ev: MessageEvent) => {
  if (ev.data === 'signed-out' && session) dropSession('You signed out in another tab.');
  if (ev.data === 'signed-in' && !session) void boot();
});

async function boot(): Promise<void> {
  view.dataset['route'] = 'loading';
  const credential = takeCredentialFromLocation();
  let message: string | null = null;
  if (credential) {
    message = await exchange(credential);
    // A learner signing in lands on My team (the link's page is the leaderboard's).
    if (session) window.history.replaceState(null, '', window.location.pathname + window.location.search + landingRoute(session.Role, session.TeamIds));
  }
  if (!session) {
    try {
      session = await api.session();
    } catch {
      session = null; // not signed in (401) or the service is down: the sign-in page says which
    }
  }
  render(message);
}

void boot();

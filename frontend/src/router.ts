// Hash routing: the server only serves index.html and assets.

export type RouteName =
  | 'leaderboard'
  | 'graph'
  | 'teams'
  | 'team'
  | 'members'
  | 'onboarding'
  | 'disciplines'
  | 'discipline'
  | 'discipline-edit'
  | 'discipline-new'
  | 'signin'
  | 'notfound'
  | 'sso'
  | 'seasons'
  | 'audit'
  | 'review'
  | 'myteam';

export interface Route {
  name: RouteName;
  id: string | null;
}

const SIMPLE: Record<string, RouteName> = {
  '': 'leaderboard',
  leaderboard: 'leaderboard',
  graph: 'graph',
  teams: 'teams',
  members: 'members',
  onboarding: 'onboarding',
  disciplines: 'disciplines',
  signin: 'signin',
  sso: 'sso',
  seasons: 'seasons',
  audit: 'audit',
  review: 'review',
  myteam: 'myteam',
};

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, '').split('?')[0] ?? '';
  const [head = '', rawId, ...rest] = path.split('/');
  if (rawId === undefined || rawId === '') {
    const name = SIMPLE[head];
    return name ? { name, id: null } : { name: 'notfound', id: null };
  }
  if (head === 'disciplines' && rawId === 'new' && rest.length === 0) return { name: 'discipline-new', id: null };
  let id: string;
  try {
    id = decodeURIComponent(rawId);
  } catch {
    return { name: 'notfound', id: null };
  }
  if (rest.length === 0 && (head === 'team' || head === 'discipline')) return { name: head, id };
  if (head === 'discipline' && rest.length === 1 && rest[0] === 'edit') return { name: 'discipline-edit', id };
  return { name: 'notfound', id: null };
}

export function teamHref(id: string): string {
  return `#/team/${encodeURIComponent(id)}`;
}

export function disciplineHref(id: string): string {
  return `#/discipline/${encodeURIComponent(id)}`;
}

export function disciplineEditHref(id: string): string {
  return `#/discipline/${encodeURIComponent(id)}/edit`;
}

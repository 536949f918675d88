// Hash routing: the server only serves index.html and assets.

export type RouteName = 'leaderboard' | 'graph' | 'teams' | 'team' | 'disciplines' | 'discipline' | 'signin' | 'notfound';

export interface Route {
  name: RouteName;
  id: string | null;
}

const SIMPLE: Record<string, RouteName> = {
  '': 'leaderboard',
  leaderboard: 'leaderboard',
  graph: 'graph',
  teams: 'teams',
  disciplines: 'disciplines',
  signin: 'signin',
};

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, '').split('?')[0] ?? '';
  const [head = '', rawId, ...rest] = path.split('/');
  if (rawId === undefined || rawId === '') {
    const name = SIMPLE[head];
    return name ? { name, id: null } : { name: 'notfound', id: null };
  }
  if (rest.length === 0 && (head === 'team' || head === 'discipline')) {
    try {
      return { name: head, id: decodeURIComponent(rawId) };
    } catch {
      return { name: 'notfound', id: null };
    }
  }
  return { name: 'notfound', id: null };
}

export function teamHref(id: string): string {
  return `#/team/${encodeURIComponent(id)}`;
}

export function disciplineHref(id: string): string {
  return `#/discipline/${encodeURIComponent(id)}`;
}

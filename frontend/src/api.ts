// Calls to the Questline API on the same origin, with the bearer token.

import type {
  Discipline,
  DisciplineSummary,
  LeaderboardEntry,
  Member,
  Overview,
  Problem,
  Series,
  Team,
} from './types';

/** Raised for any failed call; `problem` holds the RFC 9457 body when there is one. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem | null;
  readonly retryAfter: string | null;

  constructor(status: number, problem: Problem | null, message: string, retryAfter: string | null = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

/**
 * The API lives at the service's base URL; the dashboard at `<base>/ui/`.
 * Taking the base from the page's own path keeps the dashboard working when the
 * service is mounted under a prefix.
 */
export function apiBase(pathname: string): string {
  const at = pathname.lastIndexOf('/ui/');
  if (at >= 0) return pathname.slice(0, at);
  if (pathname.endsWith('/ui')) return pathname.slice(0, -3);
  return '';
}

/** A random UUID (v4) that also works outside secure contexts (plain http on a LAN). */
export function randomUuid(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

type Query = Record<string, string | number | null | undefined>;

function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== null && v !== undefined && v !== '') params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export interface ApiResult<T> {
  status: number;
  data: T;
}

export class Api {
  constructor(
    private readonly getToken: () => string | null,
    private readonly base: string = apiBase(window.location.pathname),
  ) {}

  async request<T>(method: string, path: string, body?: unknown, query?: Query): Promise<ApiResult<T>> {
    const headers: Record<string, string> = { Accept: 'application/json, application/problem+json' };
    const token = this.getToken();
    if (token) headers['Authorization'] = `Bearer ${token}`;
    if (method === 'POST') {
      // One key per user action: a retried POST (a flaky network) is replayed,
      // not performed twice; this matters most for the admin-flag switch.
      headers['Idempotency-Key'] = randomUuid();
    }
    const init: RequestInit = { method, headers, credentials: 'omit', cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await fetch(this.base + withQuery(path, query), init);
    } catch {
      throw new ApiError(0, null, 'Cannot reach the Questline service. Check your connection and try again.');
    }
    const text = await response.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
    }
    if (!response.ok) {
      const problem = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Problem) : null;
      const fallback = `${response.status} ${response.statusText || 'Error'}`.trim();
      throw new ApiError(response.status, problem, problem?.title ?? fallback, response.headers.get('Retry-After'));
    }
    return { status: response.status, data: parsed as T };
  }

  private async get<T>(path: string, query?: Query): Promise<T> {
    return (await this.request<T>('GET', path, undefined, query)).data;
  }

  teams(): Promise<Team[]> {
    return this.get<Team[]>('/team');
  }

  async createTeam(name: string, tags: string[]): Promise<Team> {
    return (await this.request<Team>('POST', '/team', { name, tags })).data;
  }

  members(teamId: string): Promise<Member[]> {
    return this.get<Member[]>(`/team/${encodeURIComponent(teamId)}/members`);
  }

  addMember(teamId: string, email: string, givenName: string): Promise<ApiResult<unknown>> {
    return this.request('POST', `/team/${encodeURIComponent(teamId)}/members`, { email, givenName });
  }

  async switchAdminTeam(teamId: string): Promise<Team> {
    return (await this.request<Team>('POST', `/team/${encodeURIComponent(teamId)}/isadminteam`)).data;
  }

  overview(teamId: string): Promise<Overview> {
    return this.get<Overview>(`/team/${encodeURIComponent(teamId)}/overview`);
  }

  completeTask(teamId: string, taskId: string): Promise<ApiResult<unknown>> {
    return this.request('POST', `/team/${encodeURIComponent(teamId)}/progress`, { TaskId: taskId });
  }

  teamGraph(teamId: string): Promise<Series> {
    return this.get<Series>(`/team/${encodeURIComponent(teamId)}/graph`);
  }

  leaderboard(discipline: string | null, limit = 50): Promise<LeaderboardEntry[]> {
    return this.get<LeaderboardEntry[]>('/leaderboard', { limit, discipline });
  }

  leaderboardGraph(opts: { top?: number; discipline?: string | null; from?: string | null; to?: string | null }): Promise<Series[]> {
    return this.get<Series[]>('/leaderboard/graph', {
      top: opts.top ?? 10,
      discipline: opts.discipline,
      from: opts.from,
      to: opts.to,
    });
  }

  disciplines(): Promise<DisciplineSummary[]> {
    return this.get<DisciplineSummary[]>('/discipline');
  }

  discipline(id: string): Promise<Discipline> {
    return this.get<Discipline>(`/discipline/${encodeURIComponent(id)}`);
  }
}

// Calls to the Questline API on the same origin. The browser carries the session
// cookie (HttpOnly: this code never sees it); writes add the session's CSRF token.

import type {
  Completion,
  Discipline,
  DisciplineSummary,
  LeaderboardEntry,
  Member,
  MemberAdd,
  Overview,
  Problem,
  ProgressCreate,
  Series,
  SessionCreate,
  SessionInfo,
  SurveyFlag,
  Team,
  TeamCreate,
  TeamUpdate,
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

type Query = Record<string, string | number | boolean | null | undefined>;

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== null && v !== undefined && v !== '' && v !== false) params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

/** The `rel="next"` target of a `Link` header, or null. */
export function nextLink(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(',')) {
    const m = /<([^>]*)>\s*;\s*rel="?next"?/i.exec(part);
    if (m?.[1]) return m[1];
  }
  return null;
}

export interface ApiResult<T> {
  status: number;
  data: T;
  etag: string | null;
  link: string | null;
}

export interface RequestOptions {
  query?: Query;
  headers?: Record<string, string>;
  /** A body sent as is (e.g. CSV text) with this content type. */
  raw?: { body: string; contentType: string };
}

const enc = encodeURIComponent;

function problemOf(text: string): Problem | null {
  if (!text) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Problem) : null;
  } catch {
    return null;
  }
}

export class Api {
  /** The session's CSRF token, sent on every change (set after sign-in). */
  csrf: string | null = null;

  constructor(private readonly base: string = apiBase(window.location.pathname)) {}

  url(path: string, query?: Query): string {
    return this.base + withQuery(path, query);
  }

  headersFor(method: string, extra?: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { Accept: 'application/json, application/problem+json', ...extra };
    if (method !== 'GET' && method !== 'HEAD') {
      if (this.csrf) headers['X-CSRF-Token'] = this.csrf;
    }
    if (method === 'POST' && !headers['Idempotency-Key']) {
      // One key per user action: a retried POST (a flaky network) is replayed,
      // not performed twice; this matters most for the admin-flag switch.
      headers['Idempotency-Key'] = randomUuid();
    }
    return headers;
  }

  async request<T>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<ApiResult<T>> {
    const headers = this.headersFor(method, opts.headers);
    const init: RequestInit = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (opts.raw) {
      headers['Content-Type'] = opts.raw.contentType;
      init.body = opts.raw.body;
    } else if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await fetch(this.url(path, opts.query), init);
    } catch {
      throw new ApiError(0, null, 'Cannot reach the Questline service. Check your connection and try again.');
    }
    const etag = response.headers.get('ETag');
    const link = response.headers.get('Link');
    if (response.status === 304) return { status: 304, data: null as T, etag, link };
    const text = await response.text();
    if (!response.ok) {
      const problem = problemOf(text);
      const fallback = `${response.status} ${response.statusText || 'Error'}`.trim();
      throw new ApiError(response.status, problem, problem?.title ?? fallback, response.headers.get('Retry-After'));
    }
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
    }
    return { status: response.status, data: parsed as T, etag, link };
  }

  private async get<T>(path: string, query?: Query): Promise<T> {
    return (await this.request<T>('GET', path, undefined, { query })).data;
  }

  // Session ------------------------------------------------------------------
  async session(): Promise<SessionInfo> {
    const info = await this.get<SessionInfo>('/auth/session');
    this.csrf = info.CsrfToken;
    return info;
  }

  async signIn(body: SessionCreate): Promise<SessionInfo> {
    const info = (await this.request<SessionInfo>('POST', '/auth/session', body)).data;
    this.csrf = info.CsrfToken;
    return info;
  }

  async signOut(): Promise<void> {
    await this.request('DELETE', '/auth/session');
    this.csrf = null;
  }

  // Teams --------------------------------------------------------------------
  teams(): Promise<Team[]> {
    return this.get<Team[]>('/team');
  }

  /** Every team, fetched in pages of `pageSize` (bounded responses for thousands). */
  allTeams(pageSize = 1000, onPage?: (loaded: number) => void): Promise<Team[]> {
    return this.allPages<Team>('/team', pageSize, onPage);
  }

  /** Every item of a list, following its `Link: rel="next"` pages. */
  async allPages<T>(path: string, pageSize = 1000, onPage?: (loaded: number) => void): Promise<T[]> {
    const out: T[] = [];
    let next: string | null = withQuery(path, { limit: pageSize });
    while (next) {
      const res: ApiResult<T[]> = await this.request<T[]>('GET', next);
      out.push(...res.data);
      onPage?.(out.length);
      const link = nextLink(res.link);
      // The Link target is absolute or rooted at the service; keep the path and query.
      next = link ? stripOrigin(link, this.base) : null;
    }
    return out;
  }

  team(teamId: string): Promise<ApiResult<Team>> {
    return this.request<Team>('GET', `/team/${enc(teamId)}`);
  }

  async createTeam(name: string, tags: string[]): Promise<Team> {
    const body: Omit<TeamCreate, 'Invite'> = { name, tags }; // no invitations: a new team has no members
    return (await this.request<Team>('POST', '/team', body)).data;
  }

  updateTeam(teamId: string, changes: TeamUpdate, etag: string | null): Promise<ApiResult<Team>> {
    return this.request<Team>('PATCH', `/team/${enc(teamId)}`, changes, { headers: etag ? { 'If-Match': etag } : {} });
  }

  deleteTeam(teamId: string, etag: string | null): Promise<ApiResult<unknown>> {
    return this.request('DELETE', `/team/${enc(teamId)}`, undefined, { headers: etag ? { 'If-Match': etag } : {} });
  }

  members(teamId: string): Promise<Member[]> {
    return this.allPages<Member>(`/team/${enc(teamId)}/members`);
  }

  allMembers(): Promise<Member[]> {
    return this.allPages<Member>('/member');
  }

  addMember(teamId: string, email: string, givenName: string, invite = false): Promise<ApiResult<Member>> {
    // `Invite` e-mails the member an invitation when it joins the team.
    const body: Omit<MemberAdd, 'Invite'> & { Invite: boolean } = { email, givenName, Invite: invite };
    return this.request<Member>('POST', `/team/${enc(teamId)}/members`, body);
  }

  removeMember(teamId: string, memberId: string): Promise<ApiResult<unknown>> {
    return this.request('DELETE', `/team/${enc(teamId)}/members/${enc(memberId)}`);
  }

  async switchAdminTeam(teamId: string): Promise<Team> {
    return (await this.request<Team>('POST', `/team/${enc(teamId)}/isadminteam`)).data;
  }

  async setSurvey(teamId: string, done: boolean): Promise<Team> {
    const body: SurveyFlag = { IsSurveyCompleted: done };
    return (await this.request<Team>('POST', `/team/${enc(teamId)}/survey`, body)).data;
  }

  bulk(csv: string, dryRun: boolean, onUpload?: (fraction: number) => void): Promise<ApiResult<Team[]>> {
    // XMLHttpRequest, not fetch: only it reports upload progress (large files).
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', this.url('/team/bulk', { dryRun: dryRun ? 'true' : null }));
      xhr.withCredentials = true;
      for (const [k, v] of Object.entries(this.headersFor('POST', { 'Content-Type': 'text/csv; charset=utf-8' }))) xhr.setRequestHeader(k, v);
      xhr.upload.onprogress = (ev) => {
        if (ev.lengthComputable && onUpload) onUpload(ev.loaded / ev.total);
      };
      xhr.onerror = () => reject(new ApiError(0, null, 'Cannot reach the Questline service. Check your connection and try again.'));
      xhr.onload = () => {
        const text = xhr.responseText;
        if (xhr.status < 200 || xhr.status >= 300) {
          const problem = problemOf(text);
          reject(new ApiError(xhr.status, problem, problem?.title ?? `${xhr.status} Error`, xhr.getResponseHeader('Retry-After')));
          return;
        }
        resolve({ status: xhr.status, data: JSON.parse(text) as Team[], etag: null, link: null });
      };
      xhr.send(csv);
    });
  }

  // Progress -----------------------------------------------------------------
  overview(teamId: string): Promise<Overview> {
    return this.get<Overview>(`/team/${enc(teamId)}/overview`);
  }

  completions(teamId: string): Promise<Completion[]> {
    return this.get<Completion[]>(`/team/${enc(teamId)}/progress`);
  }

  completeTask(teamId: string, taskId: string, completedAt: string | null = null): Promise<ApiResult<Completion>> {
    const body: ProgressCreate = { TaskId: taskId };
    if (completedAt) body.CompletedAt = completedAt;
    return this.request<Completion>('POST', `/team/${enc(teamId)}/progress`, body);
  }

  withdrawTask(teamId: string, taskId: string): Promise<ApiResult<unknown>> {
    return this.request('DELETE', `/team/${enc(teamId)}/progress/${enc(taskId)}`);
  }

  teamGraph(teamId: string): Promise<Series> {
    return this.get<Series>(`/team/${enc(teamId)}/graph`);
  }

  // Leaderboard --------------------------------------------------------------
  leaderboard(opts: { discipline: string | null; limit?: number; offset?: number; etag?: string | null; season?: string | null; tag?: string | null }): Promise<ApiResult<LeaderboardEntry[]>> {
    return this.request<LeaderboardEntry[]>('GET', '/leaderboard', undefined, {
      query: { limit: opts.limit ?? 50, offset: opts.offset || null, discipline: opts.discipline, season: opts.season, tag: opts.tag },
      headers: opts.etag ? { 'If-None-Match': opts.etag } : {},
    });
  }

  /** The `limit` entries centred on a team, with true ranks (422: the team is not ranked). */
  leaderboardAround(teamId: string, limit = 5): Promise<ApiResult<LeaderboardEntry[]>> {
    return this.request<LeaderboardEntry[]>('GET', '/leaderboard', undefined, { query: { around: teamId, limit } });
  }

  /** The URL of the leaderboard's Server-Sent Events stream (first page only: no offset). */
  leaderboardStreamUrl(opts: { discipline: string | null; limit: number; season?: string | null; tag?: string | null }): string {
    return this.url('/leaderboard/stream', { discipline: opts.discipline, limit: opts.limit, season: opts.season, tag: opts.tag });
  }

  leaderboardGraph(opts: { top?: number; discipline?: string | null; from?: string | null; to?: string | null }): Promise<Series[]> {
    return this.get<Series[]>('/leaderboard/graph', {
      top: opts.top ?? 10,
      discipline: opts.discipline,
      from: opts.from,
      to: opts.to,
    });
  }

  // CSV exports ----------------------------------------------------------------
  /** GET `path` as CSV (`Accept: text/csv`): the body and the file name it names. */
  async csv(path: string, query?: Query): Promise<{ blob: Blob; filename: string }> {
    let response: Response;
    try {
      response = await fetch(this.url(path, query), {
        method: 'GET',
        headers: { Accept: 'text/csv' },
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch {
      throw new ApiError(0, null, 'Cannot reach the Questline service. Check your connection and try again.');
    }
    if (!response.ok) {
      const problem = problemOf(await response.text());
      throw new ApiError(response.status, problem, problem?.title ?? `${response.status} Error`, response.headers.get('Retry-After'));
    }
    const fallback = (path.split('/').filter(Boolean).join('-') || 'export') + '.csv';
    return { blob: await response.blob(), filename: filenameOf(response.headers.get('Content-Disposition'), fallback) };
  }

  // Disciplines --------------------------------------------------------------
  disciplines(): Promise<DisciplineSummary[]> {
    return this.get<DisciplineSummary[]>('/discipline');
  }

  async discipline(id: string): Promise<Discipline> {
    return (await this.disciplineWithEtag(id)).data;
  }

  disciplineWithEtag(id: string): Promise<ApiResult<Discipline>> {
    return this.request<Discipline>('GET', `/discipline/${enc(id)}`);
  }

  createDiscipline(doc: unknown): Promise<ApiResult<Discipline>> {
    return this.request<Discipline>('POST', '/discipline', doc);
  }

  replaceDiscipline(id: string, doc: unknown, etag: string | null, force = false): Promise<ApiResult<Discipline>> {
    return this.request<Discipline>('PUT', `/discipline/${enc(id)}`, doc, {
      headers: etag ? { 'If-Match': etag } : {},
      query: { force: force ? 'true' : null },
    });
  }

  deleteDiscipline(id: string, etag: string | null, force = false): Promise<ApiResult<unknown>> {
    return this.request('DELETE', `/discipline/${enc(id)}`, undefined, {
      headers: etag ? { 'If-Match': etag } : {},
      query: { force: force ? 'true' : null },
    });
  }
}

/** A Link target as a path below the API base (the service may sit under a prefix). */
export function stripOrigin(link: string, base: string): string {
  let path = link;
  try {
    const u = new URL(link, 'http://x');
    path = u.pathname + u.search;
  } catch {
    /* keep as is */
  }
  return base && path.startsWith(base) ? path.slice(base.length) : path;
}

/**
 * The file name a `Content-Disposition` header names (`filename*=UTF-8''…` first, then
 * `filename="…"`), reduced to a safe base name; `fallback` when there is none.
 */
export function filenameOf(header: string | null, fallback: string): string {
  let name: string | null = null;
  if (header) {
    const star = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(header);
    if (star?.[1]) {
      try {
        name = decodeURIComponent(star[1].trim());
      } catch {
        name = null;
      }
    }
    if (!name) {
      const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/.exec(header);
      name = plain ? (plain[1] ?? plain[2] ?? '').replace(/\\(.)/g, '$1') : null;
    }
  }
  const base = (name ?? '').split(/[\\/]/).pop()?.replace(/[\u0000-\u001f\u007f]/g, '').trim() ?? '';
  return base && base !== '.' && base !== '..' ? base : fallback;
}

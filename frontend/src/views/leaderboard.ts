import { h, replaceChildren } from '../dom';
import { csvButton, fillDisciplineSelect, handleError, type Ctx } from '../context';
import { formatDateTime, formatNumber } from '../format';
import { teamHref } from '../router';
import type { LeaderboardEntry } from '../types';
import { competitionChoice, competitionFilters } from './competition';
import { disciplineFromHash } from './lti';

export const LEADERBOARD_REFRESH_MS = 5000;
export const LEADERBOARD_PAGE = 50;
/** After the stream failed, polling runs this long before the stream is tried again. */
export const STREAM_RETRY_MS = 60_000;

// Kept across navigation, so coming back shows the same filter.
let selectedDiscipline: string | null = null;

export function renderLeaderboard(ctx: Ctx): void {
  selectedDiscipline = disciplineFromHash(window.location.hash) ?? selectedDiscipline;
  const select = h(
    'select',
    { id: 'leaderboard-discipline', name: 'discipline', 'data-testid': 'discipline-filter' },
    h('option', { value: '' }, 'All disciplines'),
  );
  const tbody = h('tbody', { 'data-testid': 'leaderboard-body' });
  const status = h('p', { id: 'leaderboard-updated', class: 'muted small', 'data-testid': 'leaderboard-updated' }, 'Loading…');
  const table = h(
    'table',
    { id: 'leaderboard-table', class: 'data', 'data-testid': 'leaderboard-table' },
    h('caption', { class: 'visually-hidden' }, 'Teams ranked by score'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col', class: 'num' }, 'Rank'),
        h('th', { scope: 'col' }, 'Team'),
        h('th', { scope: 'col', class: 'num' }, 'Score'),
        h('th', { scope: 'col', class: 'num' }, 'Tasks completed'),
      ),
    ),
    tbody,
  );

  const prev = h('button', { type: 'button', id: 'leaderboard-prev', 'data-testid': 'leaderboard-prev' }, 'Previous');
  const next = h('button', { type: 'button', id: 'leaderboard-next', 'data-testid': 'leaderboard-next' }, 'Next');
  const pageLabel = h('span', { id: 'leaderboard-page', class: 'muted small', 'data-testid': 'leaderboard-page' }, '');
  let offset = 0;
  let etag: string | null = null;
  let entries: LeaderboardEntry[] = [];
  const mine = new Set(ctx.session.TeamIds);
  prev.addEventListener('click', () => {
    offset = Math.max(0, offset - LEADERBOARD_PAGE);
    etag = null;
    restart();
  });
  next.addEventListener('click', () => {
    offset += LEADERBOARD_PAGE;
    etag = null;
    restart();
  });

  replaceChildren(ctx.view,
    h('h1', { tabindex: -1 }, 'Leaderboard'),
    mine.size ? h('p', { class: 'muted small', id: 'leaderboard-mine-help' }, 'Your team is highlighted.') : null,
    h(
      'form',
      { class: 'filters', role: 'search', 'aria-label': 'Leaderboard filter' },
      h('div', { class: 'field' }, h('label', { for: 'leaderboard-discipline' }, 'Discipline'), select),
      ...competitionFilters(ctx, () => {
        offset = 0;
        etag = null;
        restart();
      }),
    ),
    h('div', { class: 'table-wrap', role: 'region', 'aria-label': 'Leaderboard', tabindex: 0 }, table),
    h('nav', { class: 'pager', 'aria-label': 'Pages of the leaderboard' }, prev, pageLabel, next),
    h('p', { class: 'actions' }, csvButton(ctx, 'leaderboard-csv', 'Download CSV', '/leaderboard', () => ({ discipline: selectedDiscipline, ...competitionChoice(), limit: LEADERBOARD_PAGE, offset: offset || null }))),
    status,
  );

  void fillDisciplineSelect(ctx, select, selectedDiscipline);
  select.addEventListener('change', () => {
    selectedDiscipline = select.value || null;
    offset = 0;
    etag = null;
    restart();
  });

  let timer: number | undefined;
  let source: EventSource | null = null;
  // Set once the stream failed on this page: poll from then on.
  let streamFailed = typeof EventSource === 'undefined';
  function closeStream(): void {
    source?.close();
    source = null;
    delete table.dataset['live'];
  }
  let retry: number | undefined;
  ctx.onCleanup(() => {
    window.clearTimeout(timer);
    window.clearTimeout(retry);
    closeStream();
  });

  /** The first page follows the stream; other pages (and a failed stream) poll. */
  function restart(): void {
    closeStream();
    window.clearTimeout(timer);
    if (offset === 0 && !streamFailed) openStream();
    else void load();
  }

  function openStream(): void {
    const discipline = selectedDiscipline;
    // One more than a page: tells whether there is a next page.
    const es = new EventSource(ctx.api.leaderboardStreamUrl({ discipline, ...competitionChoice(), limit: LEADERBOARD_PAGE + 1 }), { withCredentials: true });
    source = es;
    es.addEventListener('leaderboard', (ev: MessageEvent<string>) => {
      if (source !== es || !ctx.isCurrent()) return;
      let data: LeaderboardEntry[];
      try {
        data = JSON.parse(ev.data) as LeaderboardEntry[];
      } catch {
        return;
      }
      next.disabled = data.length <= LEADERBOARD_PAGE;
      entries = data.slice(0, LEADERBOARD_PAGE);
      etag = null;
      table.dataset['live'] = 'true';
      table.dataset['version'] = ev.lastEventId;
      show('live');
    });
    es.addEventListener('error', () => {
      if (source !== es) return;
      // The stream is refused or broke (a proxy, the per-server cap, sign-out):
      // fall back to polling with If-None-Match; a 401 shows up there.
      // Try the stream again a minute later (e.g. after it ended on the server's
      // hourly limit, or a restart).
      streamFailed = true;
      closeStream();
      if (!ctx.isCurrent()) return;
      void load();
      window.clearTimeout(retry);
      retry = window.setTimeout(() => {
        streamFailed = false;
        if (ctx.isCurrent() && offset === 0) restart();
      }, STREAM_RETRY_MS);
    });
  }

  function row(e: LeaderboardEntry): HTMLTableRowElement {
    const isMine = mine.has(e.TeamId);
    return h(
      'tr',
      { 'data-team-id': e.TeamId, 'data-testid': 'leaderboard-row', 'data-rank': e.Rank, class: isMine ? 'mine' : null, 'data-mine': isMine ? 'true' : null },
      h('td', { class: 'num rank' }, String(e.Rank)),
      h(
        'th',
        { scope: 'row' },
        h('a', { href: teamHref(e.TeamId), 'data-team-link': e.TeamId }, e.Name),
        isMine ? h('span', { class: 'badge mine-badge' }, 'Your team') : null,
      ),
      h('td', { class: 'num', 'data-testid': 'leaderboard-score' }, formatNumber(e.Score)),
      h('td', { class: 'num' }, formatNumber(e.TasksCompleted)),
    );
  }

  async function load(): Promise<void> {
    window.clearTimeout(timer);
    const discipline = selectedDiscipline;
    try {
      const asked = offset;
      const res = await ctx.api.leaderboard({ discipline, ...competitionChoice(), limit: LEADERBOARD_PAGE, offset, etag });
      if (!ctx.isCurrent() || discipline !== selectedDiscipline || asked !== offset) return;
      // 304: unchanged since the ETag we hold (If-None-Match); keep the rows.
      if (res.status !== 304) {
        entries = res.data;
        etag = res.etag;
        next.disabled = res.link === null;
      }
      show('poll');
    } catch (err) {
      handleError(ctx, err);
    }
    if (ctx.isCurrent()) timer = window.setTimeout(() => void load(), LEADERBOARD_REFRESH_MS);
  }

  function show(mode: 'live' | 'poll'): void {
    prev.disabled = offset === 0;
    pageLabel.textContent = entries.length ? `Ranks ${offset + 1}–${offset + entries.length}` : '';
    table.dataset['etag'] = etag ?? '';
    // Keep keyboard focus on the same team's link across refreshes.
    const focusedTeam = (document.activeElement as HTMLElement | null)?.dataset?.['teamLink'];
    tbody.replaceChildren(
      ...(entries.length
        ? entries.map(row)
        : [h('tr', null, h('td', { colspan: 4, class: 'empty' }, offset ? 'No more teams.' : 'No ranked teams yet: create teams and record their progress.'))]),
    );
    if (focusedTeam) tbody.querySelector<HTMLElement>(`[data-team-link="${CSS.escape(focusedTeam)}"]`)?.focus();
    const how = mode === 'live' ? 'live updates' : `refreshes every ${LEADERBOARD_REFRESH_MS / 1000} s`;
    status.textContent = `Updated ${formatDateTime(Date.now())} · ${how}. Admin and archived teams are not ranked.`;
    table.dataset['loaded'] = 'true';
  }

  restart();
}

import { h, tableWrap, replaceChildren } from '../dom';
import { busy, csvButton, handleError, type Ctx } from '../context';
import { formatNumber, parseTags } from '../format';
import { teamHref } from '../router';
import type { Team } from '../types';

export const PAGE_SIZE = 50;

export function renderTeams(ctx: Ctx): void {
  const tbody = h('tbody', { 'data-testid': 'teams-body' });
  const table = h(
    'table',
    { id: 'teams-table', class: 'data', 'data-testid': 'teams-table' },
    h('caption', { class: 'visually-hidden' }, 'All teams of the organization'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col' }, 'Team'),
        h('th', { scope: 'col' }, 'Status'),
        h('th', { scope: 'col', class: 'num' }, 'Score'),
        h('th', { scope: 'col', class: 'num' }, 'Members'),
        h('th', { scope: 'col' }, 'Admin team'),
        h('th', { scope: 'col' }, 'Survey'),
        h('th', { scope: 'col' }, 'Tags'),
      ),
    ),
    tbody,
  );

  const search = h('input', { id: 'teams-search', name: 'q', type: 'search', autocomplete: 'off', 'data-testid': 'teams-search' });
  const tagSelect = h('select', { id: 'teams-tag', name: 'tag', 'data-testid': 'teams-tag' }, h('option', { value: '' }, 'Any tag'));
  const statusSelect = h(
    'select',
    { id: 'teams-status', name: 'status', 'data-testid': 'teams-status' },
    h('option', { value: '' }, 'Active and archived'),
    h('option', { value: 'Active' }, 'Active'),
    h('option', { value: 'Archived' }, 'Archived'),
  );
  const prev = h('button', { type: 'button', id: 'teams-prev', 'data-testid': 'teams-prev' }, 'Previous');
  const next = h('button', { type: 'button', id: 'teams-next', 'data-testid': 'teams-next' }, 'Next');
  const pageStatus = h('p', { id: 'teams-page-status', class: 'muted small', 'aria-live': 'polite', 'data-testid': 'teams-page-status' }, 'Loading…');
  const filters = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Find teams' },
    h('div', { class: 'field' }, h('label', { for: 'teams-search' }, 'Name contains'), search),
    h('div', { class: 'field' }, h('label', { for: 'teams-tag' }, 'Tag'), tagSelect),
    h('div', { class: 'field' }, h('label', { for: 'teams-status' }, 'Status'), statusSelect),
  );
  filters.addEventListener('submit', (ev) => ev.preventDefault());

  replaceChildren(ctx.view, 
    h('h1', { tabindex: -1 }, 'Teams'),
    ctx.admin ? createTeamForm() : null,
    ctx.admin ? h('p', null, 'Many teams at once? ', h('a', { href: '#/onboarding' }, 'Import them from a CSV file'), '.') : null,
    filters,
    h('p', { class: 'actions' }, csvButton(ctx, 'teams-csv', 'Download CSV', '/team', () => ({}))),
    tableWrap('Teams', table),
    h('nav', { class: 'pager', 'aria-label': 'Pages of teams' }, prev, pageStatus, next),
  );

  let all: Team[] = [];
  let page = 0;
  const matches = (t: Team): boolean => {
    const q = search.value.trim().toLocaleLowerCase();
    const tag = tagSelect.value.toLocaleLowerCase();
    return (
      (!q || t.Name.toLocaleLowerCase().includes(q)) &&
      (!tag || (t.Tags ?? []).some((x) => x.toLocaleLowerCase() === tag)) &&
      (!statusSelect.value || t.Status === statusSelect.value)
    );
  };
  function show(): void {
    const found = all.filter(matches);
    const pages = Math.max(1, Math.ceil(found.length / PAGE_SIZE));
    page = Math.min(page, pages - 1);
    const shown = found.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
    tbody.replaceChildren(
      ...(shown.length
        ? shown.map(row)
        : [h('tr', null, h('td', { colspan: 7, class: 'empty' }, all.length ? 'No team matches.' : 'No teams yet.'))]),
    );
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    pageStatus.textContent = found.length
      ? `Teams ${formatNumber(page * PAGE_SIZE + 1)}–${formatNumber(page * PAGE_SIZE + shown.length)} of ${formatNumber(found.length)}${found.length !== all.length ? ` (of ${formatNumber(all.length)} in all)` : ''} · page ${page + 1} of ${pages}`
      : 'No teams.';
  }
  for (const el of [search, tagSelect, statusSelect]) {
    el.addEventListener(el === search ? 'input' : 'change', () => {
      page = 0;
      show();
    });
  }
  prev.addEventListener('click', () => {
    page -= 1;
    show();
  });
  next.addEventListener('click', () => {
    page += 1;
    show();
  });

  function createTeamForm(): HTMLElement {
    const name = h('input', { id: 'create-team-name', name: 'name', type: 'text', required: true, maxlength: 100, autocomplete: 'off', 'data-testid': 'create-team-name' });
    const tags = h('input', { id: 'create-team-tags', name: 'tags', type: 'text', autocomplete: 'off', 'aria-describedby': 'create-team-tags-help', 'data-testid': 'create-team-tags' });
    const form = h(
      'form',
      { id: 'create-team-form', class: 'card form inline-form', 'data-testid': 'create-team-form', 'aria-labelledby': 'create-team-heading' },
      h('h2', { id: 'create-team-heading', class: 'h3' }, 'Create a team'),
      h('div', { class: 'field' }, h('label', { for: 'create-team-name' }, 'Name'), name),
      h(
        'div',
        { class: 'field' },
        h('label', { for: 'create-team-tags' }, 'Tags (optional)'),
        tags,
        h('span', { id: 'create-team-tags-help', class: 'muted small' }, 'Separate tags with commas.'),
      ),
      h('div', { class: 'field actions' }, h('button', { type: 'submit', id: 'create-team-submit', class: 'primary', 'data-testid': 'create-team-submit' }, 'Create team')),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void busy(form, async () => {
        try {
          const team = await ctx.api.createTeam(name.value.trim(), parseTags(tags.value));
          if (!ctx.isCurrent()) return;
          form.reset();
          ctx.notify(`Team “${team.Name}” created.`);
          await load();
        } catch (err) {
          handleError(ctx, err, form);
        }
      });
    });
    return form;
  }

  function row(t: Team): HTMLTableRowElement {
    return h(
      'tr',
      { 'data-team-id': t.Id, 'data-testid': 'team-row' },
      h('th', { scope: 'row' }, h('a', { href: teamHref(t.Id) }, t.Name)),
      h('td', null, t.Status),
      h('td', { class: 'num' }, formatNumber(t.Score)),
      h('td', { class: 'num' }, formatNumber(t.MemberCount)),
      h('td', null, t.IsAdminTeam ? 'Yes' : 'No'),
      h('td', null, t.IsSurveyCompleted ? 'Completed' : 'Not yet'),
      h('td', null, (t.Tags ?? []).join(', ')),
    );
  }

  async function load(): Promise<void> {
    try {
      const teams = await ctx.api.allTeams(1000, (n) => {
        if (ctx.isCurrent()) pageStatus.textContent = `Loading… ${formatNumber(n)} teams`;
      });
      if (!ctx.isCurrent()) return;
      all = teams;
      const tags = new Map<string, string>();
      for (const t of teams) for (const tag of t.Tags ?? []) if (!tags.has(tag.toLocaleLowerCase())) tags.set(tag.toLocaleLowerCase(), tag);
      const chosen = tagSelect.value;
      tagSelect.replaceChildren(
        h('option', { value: '' }, 'Any tag'),
        ...[...tags.values()].sort((a, b) => a.localeCompare(b)).map((tag) => h('option', { value: tag, selected: tag === chosen }, tag)),
      );
      show();
      table.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  void load();
}

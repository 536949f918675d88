import { h, tableWrap, replaceChildren } from '../dom';
import { busy, handleError, type Ctx } from '../context';
import { formatNumber, parseTags } from '../format';
import { teamHref } from '../router';
import type { Team } from '../types';

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

  replaceChildren(ctx.view, 
    h('h1', { tabindex: -1 }, 'Teams'),
    ctx.admin ? createTeamForm() : null,
    tableWrap('Teams', table),
  );

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
      const teams = await ctx.api.teams();
      if (!ctx.isCurrent()) return;
      tbody.replaceChildren(
        ...(teams.length ? teams.map(row) : [h('tr', null, h('td', { colspan: 7, class: 'empty' }, 'No teams yet.'))]),
      );
      table.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  void load();
}

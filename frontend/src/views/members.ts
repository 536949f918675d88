import { h, replaceChildren, tableWrap } from '../dom';
import { handleError, type Ctx } from '../context';
import { formatDateTime } from '../format';
import { teamHref } from '../router';
import type { Member, Team } from '../types';
import { inviteButton } from './invite';
import { scimPanel } from './scim';

/** Every member of the organization with the teams each belongs to. */
export function renderMembers(ctx: Ctx): void {
  const tbody = h('tbody');
  const search = h('input', { id: 'members-search', type: 'search', autocomplete: 'off', 'data-testid': 'members-search' });
  const table = h(
    'table',
    { id: 'org-members-table', class: 'data', 'data-testid': 'org-members-table' },
    h('caption', { class: 'visually-hidden' }, 'Members of the organization and their teams'),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Email'), h('th', { scope: 'col' }, 'Teams'), h('th', { scope: 'col' }, 'Member since'), ctx.admin ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')) : null)),
    tbody,
  );
  replaceChildren(
    ctx.view,
    h('h1', { tabindex: -1 }, 'Members'),
    h('p', { class: 'muted' }, ctx.admin ? 'Add members on a team’s page (by e-mail and given name); a member can be in several teams.' : 'Everyone in the organization and their teams.'),
    h('form', { class: 'filters', role: 'search', 'aria-label': 'Find members' }, h('div', { class: 'field' }, h('label', { for: 'members-search' }, 'Name or e-mail contains'), search)),
    tableWrap('Members', table),
    ctx.admin ? scimPanel(ctx) : null,
  );
  let members: Member[] = [];
  let names = new Map<string, string>();

  function show(): void {
    const q = search.value.trim().toLocaleLowerCase();
    const shown = members.filter((m) => !q || m.GivenName.toLocaleLowerCase().includes(q) || (m.Email ?? '').toLocaleLowerCase().includes(q)).slice(0, 500);
    tbody.replaceChildren(
      ...(shown.length
        ? shown.map((m) =>
            h(
              'tr',
              { 'data-member-id': m.Id, 'data-testid': 'org-member-row' },
              h('th', { scope: 'row' }, m.GivenName),
              h('td', null, m.Email ?? h('span', { class: 'muted' }, 'hidden')),
              h(
                'td',
                { 'data-testid': 'member-teams' },
                m.TeamIds.length
                  ? m.TeamIds.map((id, i) => [i ? ', ' : '', h('a', { href: teamHref(id) }, names.get(id) ?? id)])
                  : h('span', { class: 'muted' }, 'No team'),
              ),
              h('td', null, formatDateTime(m.CreatedAt)),
              ctx.admin ? h('td', null, inviteButton(ctx, m)) : null,
            ),
          )
        : [h('tr', null, h('td', { colspan: ctx.admin ? 5 : 4, class: 'empty' }, members.length ? 'No member matches.' : 'No members yet.'))]),
    );
  }
  search.addEventListener('input', show);
  search.form?.addEventListener('submit', (ev) => ev.preventDefault());

  void (async () => {
    try {
      const [m, teams] = await Promise.all([ctx.api.allMembers(), ctx.api.allTeams()]);
      if (!ctx.isCurrent()) return;
      members = m;
      names = new Map(teams.map((t: Team) => [t.Id, t.Name]));
      show();
      table.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  })();
}

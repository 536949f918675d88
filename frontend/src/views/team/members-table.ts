// "Members": the team's members; admins remove them here.

import { busy, handleError } from '../../context';
import { h, tableWrap } from '../../dom';
import { formatDateTime, formatNumber } from '../../format';
import type { Member } from '../../types';
import { inviteButton } from '../invite';
import type { TeamPage } from './page';

export interface MembersSection {
  section: HTMLElement;
  load(): Promise<void>;
}

export function membersSection(page: TeamPage): MembersSection {
  const { ctx, teamId } = page;
  const membersBody = h('tbody', { 'data-testid': 'members-body' });
  const membersTable = h(
    'table',
    { id: 'members-table', class: 'data', 'data-testid': 'members-table' },
    h('caption', { class: 'visually-hidden' }, 'Members of the team'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col' }, 'Name'),
        h('th', { scope: 'col' }, 'Email'),
        h('th', { scope: 'col', class: 'num' }, 'Teams'),
        h('th', { scope: 'col' }, 'Member since'),
        ctx.admin ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')) : null,
      ),
    ),
    membersBody,
  );

  function memberRow(m: Member): HTMLTableRowElement {
    return h(
      'tr',
      { 'data-member-id': m.Id, 'data-testid': 'member-row' },
      h('th', { scope: 'row' }, m.GivenName),
      h('td', null, m.Email ?? h('span', { class: 'muted' }, 'hidden')),
      h('td', { class: 'num', title: 'Teams this member belongs to' }, formatNumber(m.TeamIds.length)),
      h('td', null, formatDateTime(m.CreatedAt)),
      ctx.admin
        ? h(
            'td',
            null,
            inviteButton(ctx, m),
            ' ',
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'data-action': 'remove-member',
                'aria-label': `Remove ${m.GivenName} from the team`,
                onclick: (ev: Event) => void removeMember(ev.currentTarget as HTMLButtonElement, m),
              },
              'Remove',
            ),
          )
        : null,
    );
  }

  async function removeMember(button: HTMLButtonElement, m: Member): Promise<void> {
    await busy(button, async () => {
      try {
        await ctx.api.removeMember(teamId, m.Id);
        if (!ctx.isCurrent()) return;
        ctx.notify(`${m.GivenName} removed from ${page.name} (still a member of the organization).`);
        await Promise.all([loadMembers(), page.reload.overview()]);
      } catch (err) {
        handleError(ctx, err);
      }
    });
  }

  async function loadMembers(): Promise<void> {
    try {
      const members = await ctx.api.members(teamId);
      if (!ctx.isCurrent()) return;
      membersBody.replaceChildren(
        ...(members.length ? members.map(memberRow) : [h('tr', null, h('td', { colspan: ctx.admin ? 5 : 4, class: 'empty' }, 'No members yet.'))]),
      );
      membersTable.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  return {
    section: h('section', { 'aria-labelledby': 'members-heading' }, h('h2', { id: 'members-heading' }, 'Members'), tableWrap('Members', membersTable)),
    load: loadMembers,
  };
}

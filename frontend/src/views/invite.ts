// "Invite" for admins: e-mail a member an invitation with a one-time sign-in link
// (POST /member/{id}/invite). Used on the Members page and on a team's members.

import { busy, handleError, type Ctx } from '../context';
import { h } from '../dom';
import type { Member } from '../types';

export function inviteButton(ctx: Ctx, member: Member): HTMLButtonElement {
  const button = h(
    'button',
    {
      type: 'button',
      class: 'small',
      'data-action': 'invite-member',
      'data-testid': 'invite-member',
      'aria-label': `E-mail ${member.GivenName} an invitation`,
      title: 'E-mail an invitation with a one-time sign-in link',
    },
    'Invite',
  );
  button.addEventListener('click', () => {
    void busy(button, async () => {
      try {
        await ctx.api.request('POST', `/member/${encodeURIComponent(member.Id)}/invite`);
        if (!ctx.isCurrent()) return;
        ctx.notify(`Invitation e-mailed to ${member.GivenName}${member.Email ? ` (${member.Email})` : ''}.`);
      } catch (err) {
        handleError(ctx, err);
      }
    });
  });
  return button;
}

/** "Also e-mail an invitation" for the add-member form. */
export function inviteCheckbox(): { field: HTMLElement; input: HTMLInputElement } {
  const input = h('input', { id: 'add-member-invite', name: 'Invite', type: 'checkbox', 'data-testid': 'add-member-invite' });
  const field = h('div', { class: 'field check' }, input, h('label', { for: 'add-member-invite' }, 'E-mail an invitation'));
  return { field, input };
}

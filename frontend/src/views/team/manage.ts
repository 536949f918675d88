// The team's management (admin): its name and tags, archive or restore, delete.

import { busy, handleError, navigateWithNotice } from '../../context';
import { h } from '../../dom';
import { parseTags } from '../../format';
import { staleMessage, type TeamPage } from './page';

export interface ManageControls {
  card: HTMLElement;
  /** Fill the name/tags form, unless the user has typed in it (`force`: even then). */
  setTeam(name: string, tags: string[], force?: boolean): void;
  setStatus(status: string): void;
}

export function manageSection(page: TeamPage): ManageControls {
  const { ctx, teamId } = page;
  const name = h('input', { id: 'team-edit-name', name: 'Name', type: 'text', required: true, maxlength: 100, autocomplete: 'off', 'data-testid': 'team-edit-name' });
  const tags = h('input', { id: 'team-edit-tags', name: 'Tags', type: 'text', autocomplete: 'off', 'aria-describedby': 'team-edit-tags-help', 'data-testid': 'team-edit-tags' });
  // What the user typed is never overwritten by a late load of the team.
  let edited = false;
  for (const input of [name, tags]) input.addEventListener('input', () => (edited = true));
  const form = h(
    'form',
    { id: 'team-edit-form', class: 'card form inline-form', 'aria-labelledby': 'team-edit-heading', novalidate: true },
    h('h3', { id: 'team-edit-heading' }, 'Name and tags'),
    h('div', { class: 'field' }, h('label', { for: 'team-edit-name' }, 'Name'), name),
    h('div', { class: 'field' }, h('label', { for: 'team-edit-tags' }, 'Tags'), tags, h('span', { id: 'team-edit-tags-help', class: 'muted small' }, 'Separate tags with commas.')),
    h('div', { class: 'field actions' }, h('button', { type: 'submit', id: 'team-edit-submit', class: 'primary', 'data-testid': 'team-edit-submit' }, 'Save')),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void busy(form, async () => {
      try {
        const res = await ctx.api.updateTeam(teamId, { Name: name.value.trim(), Tags: parseTags(tags.value) }, page.etag);
        if (!ctx.isCurrent()) return;
        page.etag = res.etag;
        edited = false;
        setTeam(res.data.Name, res.data.Tags ?? []);
        ctx.notify(`Saved: “${res.data.Name}”${res.data.Tags.length ? `, tagged ${res.data.Tags.join(', ')}` : ', no tags'}.`);
        await page.reload.overview();
      } catch (err) {
        if (!staleMessage(page, err)) handleError(ctx, err, form);
      }
    });
  });

  const archive = h('button', { type: 'button', id: 'team-archive', 'data-testid': 'team-archive' }, 'Archive team');
  archive.addEventListener('click', () => {
    void busy(archive, async () => {
      const target = page.status === 'Archived' ? 'Active' : 'Archived';
      try {
        const res = await ctx.api.updateTeam(teamId, { Status: target }, page.etag);
        if (!ctx.isCurrent()) return;
        page.etag = res.etag;
        ctx.notify(
          target === 'Archived'
            ? `“${res.data.Name}” is archived: off the leaderboard and graphs; it takes no new members or progress.`
            : `“${res.data.Name}” is active again.`,
        );
        await page.reload.overview();
      } catch (err) {
        if (!staleMessage(page, err)) handleError(ctx, err);
      }
    });
  });

  const confirmDelete = h('button', { type: 'button', id: 'team-delete-confirm', class: 'danger', 'data-testid': 'team-delete-confirm' }, 'Delete team, its memberships and its progress');
  const deletePanel = h(
    'div',
    { id: 'team-delete-panel', class: 'warning', hidden: true },
    h('p', null, 'Deleting cannot be undone. Members stay in the organization. To keep the history, archive the team instead.'),
    h('div', { class: 'actions-row' }, confirmDelete, h('button', { type: 'button', onclick: () => (deletePanel.hidden = true) }, 'Cancel')),
  );
  const del = h('button', { type: 'button', id: 'team-delete', class: 'danger', 'data-testid': 'team-delete', onclick: () => { deletePanel.hidden = false; confirmDelete.focus(); } }, 'Delete…');
  confirmDelete.addEventListener('click', () => {
    void busy(confirmDelete, async () => {
      try {
        await ctx.api.deleteTeam(teamId, page.etag);
        if (!ctx.isCurrent()) return;
        navigateWithNotice('#/teams', `Team “${page.name}” deleted.`);
      } catch (err) {
        if (!staleMessage(page, err)) handleError(ctx, err);
      }
    });
  });

  const card = h(
    'div',
    { class: 'manage' },
    form,
    h('div', { class: 'card form' }, h('h3', null, 'Status'), h('p', { class: 'muted small', id: 'team-status-help' }, 'Archived teams stay listed but are not ranked, and refuse new members and progress.'), h('div', { class: 'actions-row' }, archive, del), deletePanel),
  );

  function setTeam(n: string, t: string[], force = false): void {
    if (edited && !force) return;
    name.value = n;
    tags.value = t.join(', ');
    edited = false;
    form.dataset['loaded'] = 'true';
  }

  return {
    card,
    setTeam,
    setStatus(status: string): void {
      archive.textContent = status === 'Archived' ? 'Restore team' : 'Archive team';
      archive.dataset['status'] = status;
    },
  };
}

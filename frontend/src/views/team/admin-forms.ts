// The admin's forms on the team page: add a member, mark a task complete.

import { busy, handleError } from '../../context';
import { h } from '../../dom';
import { formatNumber, localInputToIso } from '../../format';
import { inviteCheckbox } from '../invite';
import { byOrder, type TeamPage } from './page';

/** "Add a member": by e-mail and given name (an existing member is not added twice). */
export function addMemberForm(page: TeamPage): HTMLFormElement {
  const { ctx, teamId } = page;
  const email = h('input', { id: 'add-member-email', name: 'email', type: 'email', required: true, autocomplete: 'off', 'data-testid': 'add-member-email' });
  const givenName = h('input', { id: 'add-member-given-name', name: 'givenName', type: 'text', required: true, autocomplete: 'off', 'data-testid': 'add-member-given-name' });
  const invite = inviteCheckbox();
  const memberForm = h(
    'form',
    { id: 'add-member-form', class: 'card form inline-form', 'data-testid': 'add-member-form', 'aria-labelledby': 'add-member-heading' },
    h('h3', { id: 'add-member-heading' }, 'Add a member'),
    h('div', { class: 'field' }, h('label', { for: 'add-member-email' }, 'Email'), email),
    h('div', { class: 'field' }, h('label', { for: 'add-member-given-name' }, 'Given name'), givenName),
    invite.field,
    h('div', { class: 'field actions' }, h('button', { type: 'submit', id: 'add-member-submit', class: 'primary', 'data-testid': 'add-member-submit' }, 'Add member')),
  );
  memberForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void busy(memberForm, async () => {
      try {
        const who = givenName.value.trim() || email.value.trim();
        const invited = invite.input.checked;
        const res = await ctx.api.addMember(teamId, email.value.trim(), givenName.value.trim(), invited);
        if (!ctx.isCurrent()) return;
        memberForm.reset();
        ctx.notify(res.status === 201 ? `${who} added to ${page.name}${invited ? ' and invited by e-mail' : ''}.` : `${who} is already a member of ${page.name}.`);
        await Promise.all([page.reload.members(), page.reload.overview()]);
      } catch (err) {
        handleError(ctx, err, memberForm);
      }
    });
  });
  return memberForm;
}

/** "Mark a task complete": the organization's tasks by discipline, level and quest. */
export function completeTaskForm(page: TeamPage): HTMLFormElement {
  const { ctx, teamId } = page;
  const taskSelect = h(
    'select',
    { id: 'complete-task-select', name: 'TaskId', required: true, 'data-testid': 'complete-task-select' },
    h('option', { value: '' }, 'Loading tasks…'),
  );
  const completedAt = h('input', { id: 'complete-task-at', name: 'CompletedAt', type: 'datetime-local', 'aria-describedby': 'complete-task-at-help', 'data-testid': 'complete-task-at' });
  const taskForm = h(
    'form',
    { id: 'complete-task-form', class: 'card form inline-form', 'data-testid': 'complete-task-form', 'aria-labelledby': 'complete-task-heading' },
    h('h3', { id: 'complete-task-heading' }, 'Mark a task complete'),
    h('div', { class: 'field wide' }, h('label', { for: 'complete-task-select' }, 'Task'), taskSelect),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'complete-task-at' }, 'Completed at (optional)'),
      completedAt,
      h('span', { id: 'complete-task-at-help', class: 'muted small' }, 'Leave empty for now.'),
    ),
    h('div', { class: 'field actions' }, h('button', { type: 'submit', id: 'complete-task-submit', class: 'primary', 'data-testid': 'complete-task-submit' }, 'Mark complete')),
  );
  taskForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const taskId = taskSelect.value;
    if (!taskId) {
      taskSelect.setAttribute('aria-invalid', 'true');
      ctx.showError(new Error('Choose a task to mark complete.'));
      taskSelect.focus();
      return;
    }
    void busy(taskForm, async () => {
      try {
        const res = await ctx.api.completeTask(teamId, taskId, localInputToIso(completedAt.value));
        if (!ctx.isCurrent()) return;
        const task = page.tasks.get(taskId);
        const title = task ? `“${task.Title}”` : 'The task';
        ctx.notify(
          res.status === 201
            ? `${title} marked complete for ${page.name}${task ? ` (+${formatNumber(task.Points)} points)` : ''}.`
            : `${title} was already complete for ${page.name}.`,
        );
        completedAt.value = '';
        await Promise.all([page.reload.overview(), page.reload.graph(), page.reload.completions()]);
      } catch (err) {
        handleError(ctx, err, taskForm);
      }
    });
  });

  void (async () => {
    try {
      const found = await page.trees;
      if (!ctx.isCurrent()) return;
      const groups: HTMLOptGroupElement[] = [];
      for (const d of found) {
        for (const level of byOrder(d.Levels)) {
          for (const quest of byOrder(level.Quests)) {
            const sorted = byOrder(quest.Tasks);
            if (!sorted.length) continue;
            groups.push(
              h(
                'optgroup',
                { label: `${d.Title} › ${level.Title} › ${quest.Title}` },
                sorted.map((t) => h('option', { value: t.Id }, `${t.Title} (${formatNumber(t.Points)} pts)`)),
              ),
            );
          }
        }
      }
      taskSelect.replaceChildren(h('option', { value: '' }, groups.length ? 'Choose a task…' : 'No tasks: create a discipline first'), ...groups);
      taskForm.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  })();
  return taskForm;
}

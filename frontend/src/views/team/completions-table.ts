// "Completed tasks": what the team completed and when; admins undo a completion here.

import { busy, csvButton, handleError } from '../../context';
import { h, tableWrap } from '../../dom';
import { formatDateTime, formatNumber } from '../../format';
import type { Completion } from '../../types';
import type { TeamPage } from './page';

export interface CompletionsSection {
  section: HTMLElement;
  load(): Promise<void>;
}

export function completionsSection(page: TeamPage): CompletionsSection {
  const { ctx, teamId, tasks, trees } = page;
  const completionsBody = h('tbody', { 'data-testid': 'completions-body' });
  const completionsTable = h(
    'table',
    { id: 'completions-table', class: 'data', 'data-testid': 'completions-table' },
    h('caption', { class: 'visually-hidden' }, 'Tasks the team completed'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col' }, 'Task'),
        h('th', { scope: 'col', class: 'num' }, 'Points'),
        h('th', { scope: 'col' }, 'Completed'),
        ctx.admin ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')) : null,
      ),
    ),
    completionsBody,
  );

  function completionRow(c: Completion): HTMLTableRowElement {
    const task = tasks.get(c.TaskId);
    const title = task?.Title ?? c.TaskId;
    return h(
      'tr',
      { 'data-task-id': c.TaskId, 'data-testid': 'completion-row' },
      h('th', { scope: 'row' }, title, task ? h('span', { class: 'muted small block' }, task.path) : null),
      h('td', { class: 'num' }, formatNumber(c.Points)),
      h('td', { 'data-testid': 'completion-time' }, h('time', { datetime: c.CompletedAt }, formatDateTime(c.CompletedAt))),
      ctx.admin
        ? h(
            'td',
            null,
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'data-action': 'undo',
                'aria-label': `Undo “${title}”`,
                onclick: (ev: Event) => void undo(ev.currentTarget as HTMLButtonElement, c, title),
              },
              'Undo',
            ),
          )
        : null,
    );
  }

  async function undo(button: HTMLButtonElement, c: Completion, title: string): Promise<void> {
    await busy(button, async () => {
      try {
        await ctx.api.withdrawTask(teamId, c.TaskId);
        if (!ctx.isCurrent()) return;
        ctx.notify(`“${title}” is no longer complete for ${page.name} (−${formatNumber(c.Points)} points).`);
        await Promise.all([page.reload.overview(), page.reload.graph(), loadCompletions()]);
      } catch (err) {
        handleError(ctx, err);
      }
    });
  }

  async function loadCompletions(): Promise<void> {
    try {
      const [list] = await Promise.all([ctx.api.completions(teamId), trees.catch(() => [])]);
      if (!ctx.isCurrent()) return;
      const newest = [...list].sort((a, b) => b.CompletedAt.localeCompare(a.CompletedAt));
      completionsBody.replaceChildren(
        ...(newest.length ? newest.map(completionRow) : [h('tr', null, h('td', { colspan: ctx.admin ? 4 : 3, class: 'empty' }, 'No task completed yet.'))]),
      );
      completionsTable.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  return {
    section: h(
      'section',
      { 'aria-labelledby': 'completions-heading' },
      h('h2', { id: 'completions-heading' }, 'Completed tasks'),
      tableWrap('Completed tasks', completionsTable),
      h('p', { class: 'actions' }, csvButton(ctx, 'team-progress-csv', 'Download CSV', `/team/${encodeURIComponent(teamId)}/progress`, () => ({}))),
    ),
    load: loadCompletions,
  };
}

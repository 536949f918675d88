import { createGraph } from '../chart';
import { h, progressBar, tableWrap, replaceChildren } from '../dom';
import { busy, handleError, type Ctx } from '../context';
import { colorClass, formatDateTime, formatNumber, formatPercent } from '../format';
import { disciplineHref } from '../router';
import type { DisciplineProgress, Member, Overview, Task } from '../types';

function stat(label: string, value: string, testId: string): HTMLElement {
  return h('div', { class: 'stat' }, h('dt', null, label), h('dd', { 'data-testid': testId }, value));
}

function disciplineProgress(d: DisciplineProgress): HTMLElement {
  return h(
    'section',
    { class: `discipline-progress color-${colorClass(d.Color)}`, 'data-discipline-id': d.DisciplineId, 'data-testid': 'discipline-progress', 'aria-labelledby': `dp-${d.DisciplineId}` },
    h(
      'h3',
      { id: `dp-${d.DisciplineId}` },
      h('span', { class: `dot color-${colorClass(d.Color)}`, 'aria-hidden': 'true' }),
      h('a', { href: disciplineHref(d.DisciplineId) }, d.Title),
    ),
    progressBar(d.Percent, `${d.Title}: ${formatPercent(d.Percent)} complete`, 'discipline-progress-bar', { 'data-discipline-id': d.DisciplineId }),
    h(
      'p',
      { class: 'muted small' },
      `${formatPercent(d.Percent)} · ${formatNumber(d.TasksCompleted)} of ${formatNumber(d.TasksTotal)} tasks · ${formatNumber(d.PointsEarned)} of ${formatNumber(d.PointsTotal)} points`,
    ),
    h(
      'ol',
      { class: 'levels' },
      d.Levels.map((level, i) => {
        const current = level.LevelId === d.CurrentLevelId;
        return h(
          'li',
          { class: current ? 'level current' : 'level', 'data-level-id': level.LevelId, 'data-testid': 'level-progress', 'aria-current': current ? 'step' : null },
          h(
            'div',
            { class: 'level-head' },
            h('span', { class: 'level-title' }, `Level ${i + 1}: ${level.Title}`, current ? h('span', { class: 'badge' }, 'Current') : null),
            h('span', { class: 'muted small' }, `${formatNumber(level.TasksCompleted)}/${formatNumber(level.TasksTotal)} tasks · ${formatPercent(level.Percent)}`),
          ),
          progressBar(level.Percent, `Level ${i + 1} ${level.Title}: ${formatPercent(level.Percent)} complete`, 'level-progress-bar', {
            'data-level-id': level.LevelId,
          }),
          level.Quests.length
            ? h(
                'ul',
                { class: 'quests', 'aria-label': `Quests of level ${i + 1}` },
                level.Quests.map((q) =>
                  h(
                    'li',
                    { class: 'quest', 'data-quest-id': q.QuestId, 'data-testid': 'quest-progress' },
                    h('span', { class: 'quest-title' }, q.Title),
                    progressBar(q.Percent, `${q.Title}: ${formatPercent(q.Percent)} complete`, 'quest-progress-bar', { 'data-quest-id': q.QuestId }),
                    h('span', { class: 'muted small' }, `${formatNumber(q.TasksCompleted)}/${formatNumber(q.TasksTotal)}`),
                  ),
                ),
              )
            : null,
        );
      }),
    ),
  );
}

export function renderTeam(ctx: Ctx, teamId: string): void {
  const heading = h('h1', { tabindex: -1, id: 'team-name', 'data-testid': 'team-name' }, 'Team');
  const badges = h('p', { class: 'badges' });
  const stats = h('dl', { class: 'stats', id: 'team-stats', 'data-testid': 'team-stats' });
  const progress = h('div', { id: 'team-progress', 'data-testid': 'team-progress' }, h('p', { class: 'muted' }, 'Loading…'));
  const graph = createGraph({
    label: 'Cumulative score of this team over time',
    containerId: 'team-graph-chart',
    canvasId: 'team-graph-canvas',
    legendId: 'team-graph-legend',
  });
  ctx.onCleanup(() => graph.destroy());
  const membersBody = h('tbody', { 'data-testid': 'members-body' });
  const membersTable = h(
    'table',
    { id: 'members-table', class: 'data', 'data-testid': 'members-table' },
    h('caption', { class: 'visually-hidden' }, 'Members of the team'),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Email'), h('th', { scope: 'col' }, 'Member since'))),
    membersBody,
  );
  let teamName = 'Team';

  const admin = ctx.admin ? adminSection() : null;

  replaceChildren(ctx.view, 
    h('p', { class: 'crumbs' }, h('a', { href: '#/teams' }, 'Teams')),
    heading,
    badges,
    stats,
    admin?.section ?? null,
    h('section', { 'aria-labelledby': 'progress-heading' }, h('h2', { id: 'progress-heading' }, 'Progress'), progress),
    h('section', { 'aria-labelledby': 'team-graph-heading' }, h('h2', { id: 'team-graph-heading' }, 'Score over time'), graph.container),
    h('section', { 'aria-labelledby': 'members-heading' }, h('h2', { id: 'members-heading' }, 'Members'), tableWrap('Members', membersTable)),
  );

  function showOverview(o: Overview): void {
    teamName = o.Name;
    heading.textContent = o.Name;
    document.title = `${o.Name} · Questline`;
    badges.replaceChildren(
      ...[
        o.IsAdminTeam ? h('span', { class: 'badge admin', 'data-testid': 'team-admin-badge' }, 'Admin team') : null,
        o.Status !== 'Active' ? h('span', { class: 'badge' }, o.Status) : null,
      ].filter((x): x is HTMLSpanElement => x !== null),
    );
    const rank = o.Rank === null ? (o.IsAdminTeam ? 'Not ranked (admin team)' : 'Not ranked') : `#${o.Rank}`;
    stats.replaceChildren(
      stat('Score', formatNumber(o.Score), 'team-score'),
      stat('Rank', rank, 'team-rank'),
      stat('Survey', o.IsSurveyCompleted ? 'Completed' : 'Not completed', 'team-survey'),
      stat('Tasks completed', formatNumber(o.TasksCompleted), 'team-tasks-completed'),
      stat('Members', formatNumber(o.MemberCount), 'team-member-count'),
      stat('Last activity', formatDateTime(o.LastActivityAt), 'team-last-activity'),
    );
    progress.replaceChildren(
      ...(o.Disciplines.length ? o.Disciplines.map(disciplineProgress) : [h('p', { class: 'muted' }, 'No disciplines yet.')]),
    );
    progress.dataset['loaded'] = 'true';
    admin?.setAdminFlag(o.IsAdminTeam);
  }

  async function loadOverview(): Promise<void> {
    try {
      const o = await ctx.api.overview(teamId);
      if (ctx.isCurrent()) showOverview(o);
    } catch (err) {
      handleError(ctx, err);
    }
  }

  async function loadGraph(): Promise<void> {
    try {
      const s = await ctx.api.teamGraph(teamId);
      if (!ctx.isCurrent()) return;
      graph.update([s], Date.now());
      graph.container.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  function memberRow(m: Member): HTMLTableRowElement {
    return h(
      'tr',
      { 'data-member-id': m.Id, 'data-testid': 'member-row' },
      h('th', { scope: 'row' }, m.GivenName),
      h('td', null, m.Email),
      h('td', null, formatDateTime(m.CreatedAt)),
    );
  }

  async function loadMembers(): Promise<void> {
    try {
      const members = await ctx.api.members(teamId);
      if (!ctx.isCurrent()) return;
      membersBody.replaceChildren(
        ...(members.length ? members.map(memberRow) : [h('tr', null, h('td', { colspan: 3, class: 'empty' }, 'No members yet.'))]),
      );
      membersTable.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  function adminSection(): { section: HTMLElement; setAdminFlag(on: boolean): void } {
    // Switch for the admin-team flag: a toggle button (aria-pressed).
    const switchButton = h(
      'button',
      { type: 'button', id: 'admin-flag-switch', class: 'switch', 'aria-pressed': 'false', 'aria-describedby': 'admin-flag-help', 'data-testid': 'admin-flag-switch' },
      h('span', { class: 'switch-track', 'aria-hidden': 'true' }, h('span', { class: 'switch-thumb' })),
      ' Admin team',
    );
    switchButton.addEventListener('click', () => {
      void busy(switchButton, async () => {
        try {
          const team = await ctx.api.switchAdminTeam(teamId);
          if (!ctx.isCurrent()) return;
          switchButton.setAttribute('aria-pressed', String(team.IsAdminTeam));
          ctx.notify(
            team.IsAdminTeam
              ? `“${team.Name}” is now an admin team: left out of the leaderboard and graphs.`
              : `“${team.Name}” is no longer an admin team: back on the leaderboard and graphs.`,
          );
          await loadOverview();
        } catch (err) {
          handleError(ctx, err);
        }
      });
    });

    const email = h('input', { id: 'add-member-email', name: 'email', type: 'email', required: true, autocomplete: 'off', 'data-testid': 'add-member-email' });
    const givenName = h('input', { id: 'add-member-given-name', name: 'givenName', type: 'text', required: true, autocomplete: 'off', 'data-testid': 'add-member-given-name' });
    const memberForm = h(
      'form',
      { id: 'add-member-form', class: 'card form inline-form', 'data-testid': 'add-member-form', 'aria-labelledby': 'add-member-heading' },
      h('h3', { id: 'add-member-heading' }, 'Add a member'),
      h('div', { class: 'field' }, h('label', { for: 'add-member-email' }, 'Email'), email),
      h('div', { class: 'field' }, h('label', { for: 'add-member-given-name' }, 'Given name'), givenName),
      h('div', { class: 'field actions' }, h('button', { type: 'submit', id: 'add-member-submit', class: 'primary', 'data-testid': 'add-member-submit' }, 'Add member')),
    );
    memberForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void busy(memberForm, async () => {
        try {
          const who = givenName.value.trim() || email.value.trim();
          const res = await ctx.api.addMember(teamId, email.value.trim(), givenName.value.trim());
          if (!ctx.isCurrent()) return;
          memberForm.reset();
          ctx.notify(res.status === 201 ? `${who} added to ${teamName}.` : `${who} is already a member of ${teamName}.`);
          await Promise.all([loadMembers(), loadOverview()]);
        } catch (err) {
          handleError(ctx, err, memberForm);
        }
      });
    });

    const taskSelect = h(
      'select',
      { id: 'complete-task-select', name: 'TaskId', required: true, 'data-testid': 'complete-task-select' },
      h('option', { value: '' }, 'Loading tasks…'),
    );
    const taskForm = h(
      'form',
      { id: 'complete-task-form', class: 'card form inline-form', 'data-testid': 'complete-task-form', 'aria-labelledby': 'complete-task-heading' },
      h('h3', { id: 'complete-task-heading' }, 'Mark a task complete'),
      h('div', { class: 'field wide' }, h('label', { for: 'complete-task-select' }, 'Task'), taskSelect),
      h('div', { class: 'field actions' }, h('button', { type: 'submit', id: 'complete-task-submit', class: 'primary', 'data-testid': 'complete-task-submit' }, 'Mark complete')),
    );
    const tasks = new Map<string, Task>();
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
          const res = await ctx.api.completeTask(teamId, taskId);
          if (!ctx.isCurrent()) return;
          const task = tasks.get(taskId);
          const title = task ? `“${task.Title}”` : 'The task';
          ctx.notify(
            res.status === 201
              ? `${title} marked complete for ${teamName}${task ? ` (+${formatNumber(task.Points)} points)` : ''}.`
              : `${title} was already complete for ${teamName}.`,
          );
          await Promise.all([loadOverview(), loadGraph()]);
        } catch (err) {
          handleError(ctx, err, taskForm);
        }
      });
    });

    void (async () => {
      try {
        const summaries = await ctx.disciplines();
        const trees = await Promise.all(summaries.map((d) => ctx.api.discipline(d.Id)));
        if (!ctx.isCurrent()) return;
        const groups: HTMLOptGroupElement[] = [];
        for (const d of trees) {
          for (const level of [...d.Levels].sort((a, b) => a.Order - b.Order)) {
            for (const quest of [...level.Quests].sort((a, b) => a.Order - b.Order)) {
              const sorted = [...quest.Tasks].sort((a, b) => a.Order - b.Order);
              if (!sorted.length) continue;
              for (const t of sorted) tasks.set(t.Id, t);
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
        taskSelect.replaceChildren(h('option', { value: '' }, groups.length ? 'Choose a task…' : 'No tasks'), ...groups);
        taskForm.dataset['loaded'] = 'true';
      } catch (err) {
        handleError(ctx, err);
      }
    })();

    const section = h(
      'section',
      { class: 'admin-actions', 'aria-labelledby': 'admin-heading', 'data-testid': 'admin-actions' },
      h('h2', { id: 'admin-heading' }, 'Admin actions'),
      h(
        'div',
        { class: 'card switch-row' },
        switchButton,
        h('p', { id: 'admin-flag-help', class: 'muted small' }, 'Admin teams (the organization’s own management) are left out of the leaderboard and the graphs.'),
      ),
      h('div', { class: 'admin-forms' }, memberForm, taskForm),
    );
    return {
      section,
      setAdminFlag(on: boolean): void {
        switchButton.setAttribute('aria-pressed', String(on));
      },
    };
  }

  void loadOverview();
  void loadGraph();
  void loadMembers();
}

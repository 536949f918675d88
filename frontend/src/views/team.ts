import { createGraph } from '../chart';
import { h, progressBar, tableWrap, replaceChildren } from '../dom';
import { ApiError } from '../api';
import { busy, csvButton, handleError, navigateWithNotice, type Ctx } from '../context';
import { colorClass, formatDateTime, formatNumber, formatPercent, localInputToIso, parseTags } from '../format';
import { disciplineHref, teamHref } from '../router';

const NEIGHBOURS = 5;
import type { Completion, Discipline, DisciplineProgress, Member, Overview, Task } from '../types';

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
  let teamName = 'Team';
  let teamEtag: string | null = null;
  let teamStatus = 'Active';
  const tasks = new Map<string, Task & { path: string }>();
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
  const trees: Promise<Discipline[]> = (async () => {
    const summaries = await ctx.disciplines();
    const found = await Promise.all(summaries.map((d) => ctx.api.discipline(d.Id)));
    for (const d of found) {
      for (const level of [...d.Levels].sort((a, b) => a.Order - b.Order)) {
        for (const quest of [...level.Quests].sort((a, b) => a.Order - b.Order)) {
          for (const t of quest.Tasks) tasks.set(t.Id, { ...t, path: `${d.Title} › ${level.Title} › ${quest.Title}` });
        }
      }
    }
    return found;
  })();

  const admin = ctx.admin ? adminSection() : null;
  const neighbours = h('div', { id: 'neighbours', 'data-testid': 'neighbours', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));

  replaceChildren(ctx.view, 
    h('p', { class: 'crumbs' }, h('a', { href: '#/teams' }, 'Teams')),
    heading,
    badges,
    stats,
    admin?.section ?? null,
    h('section', { 'aria-labelledby': 'progress-heading' }, h('h2', { id: 'progress-heading' }, 'Progress'), progress),
    h(
      'section',
      { 'aria-labelledby': 'neighbours-heading', id: 'team-neighbours', 'data-testid': 'team-neighbours' },
      h('h2', { id: 'neighbours-heading' }, 'Your neighbours'),
      neighbours,
    ),
    h(
      'section',
      { 'aria-labelledby': 'completions-heading' },
      h('h2', { id: 'completions-heading' }, 'Completed tasks'),
      tableWrap('Completed tasks', completionsTable),
      h('p', { class: 'actions' }, csvButton(ctx, 'team-progress-csv', 'Download CSV', `/team/${encodeURIComponent(teamId)}/progress`, () => ({}))),
    ),
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
    admin?.setSurvey(o.IsSurveyCompleted);
    teamStatus = o.Status;
    admin?.setStatus(o.Status);
  }

  async function loadOverview(): Promise<void> {
    try {
      const o = await ctx.api.overview(teamId);
      if (!ctx.isCurrent()) return;
      showOverview(o);
      await loadNeighbours(o);
    } catch (err) {
      handleError(ctx, err);
    }
  }

  /**
   * The ranks around this team (`?around`). An unranked team (admin or archived: its
   * overview has no rank) is not asked about; a 422 (it just became unranked) says the same.
   */
  async function loadNeighbours(o: Overview): Promise<void> {
    const unranked = (): void => {
      const why = o.IsAdminTeam ? 'it is an admin team' : o.Status !== 'Active' ? 'it is archived' : 'it is not active';
      neighbours.replaceChildren(
        h('p', { class: 'muted', 'data-testid': 'neighbours-unranked' }, `This team is not ranked: ${why}, and admin and archived teams are left out of the leaderboard.`),
      );
      neighbours.dataset['loaded'] = 'true';
    };
    if (o.Rank === null) {
      unranked();
      return;
    }
    try {
      const res = await ctx.api.leaderboardAround(teamId, NEIGHBOURS);
      if (!ctx.isCurrent()) return;
      neighbours.replaceChildren(
        h(
          'ol',
          { class: 'neighbours', id: 'neighbours-list', 'data-testid': 'neighbours-list' },
          res.data.map((e) => {
            const self = e.TeamId === teamId;
            return h(
              'li',
              { 'data-testid': 'neighbour', 'data-team-id': e.TeamId, 'data-rank': e.Rank, class: self ? 'mine' : null, 'aria-current': self ? 'true' : null },
              h('span', { class: 'rank' }, `#${e.Rank}`),
              ' ',
              self ? h('strong', null, e.Name) : h('a', { href: teamHref(e.TeamId) }, e.Name),
              ' · ',
              h('span', { class: 'num' }, `${formatNumber(e.Score)} points`),
            );
          }),
        ),
      );
    } catch (err) {
      if (!ctx.isCurrent()) return;
      if (err instanceof ApiError && err.status === 422) unranked();
      else {
        neighbours.replaceChildren(h('p', { class: 'muted' }, 'The neighbours could not be loaded.'));
        handleError(ctx, err);
      }
    } finally {
      if (ctx.isCurrent()) neighbours.dataset['loaded'] = 'true';
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
      h('td', null, m.Email ?? h('span', { class: 'muted' }, 'hidden')),
      h('td', { class: 'num', title: 'Teams this member belongs to' }, formatNumber(m.TeamIds.length)),
      h('td', null, formatDateTime(m.CreatedAt)),
      ctx.admin
        ? h(
            'td',
            null,
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
        ctx.notify(`${m.GivenName} removed from ${teamName} (still a member of the organization).`);
        await Promise.all([loadMembers(), loadOverview()]);
      } catch (err) {
        handleError(ctx, err);
      }
    });
  }

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
        ctx.notify(`“${title}” is no longer complete for ${teamName} (−${formatNumber(c.Points)} points).`);
        await Promise.all([loadOverview(), loadGraph(), loadCompletions()]);
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

  interface AdminControls {
    section: HTMLElement;
    setAdminFlag(on: boolean): void;
    setSurvey(done: boolean): void;
    setStatus(status: string): void;
  }

  async function loadTeam(force = false): Promise<void> {
    try {
      const res = await ctx.api.team(teamId);
      if (!ctx.isCurrent()) return;
      teamEtag = res.etag;
      admin?.setTeam(res.data.Name, res.data.Tags ?? [], force);
    } catch (err) {
      handleError(ctx, err);
    }
  }

  function staleMessage(err: unknown): boolean {
    if (err instanceof ApiError && err.status === 412) {
      ctx.showError(new Error('Someone else changed this team since this page loaded; nothing was changed. The page now shows their version: check it and try again.'));
      void loadTeam(true);
      void loadOverview();
      return true;
    }
    return false;
  }

  function manageSection(): { card: HTMLElement; setTeam(name: string, tags: string[], force?: boolean): void; setStatus(status: string): void } {
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
          const res = await ctx.api.updateTeam(teamId, { Name: name.value.trim(), Tags: parseTags(tags.value) }, teamEtag);
          if (!ctx.isCurrent()) return;
          teamEtag = res.etag;
          edited = false;
          admin?.setTeam(res.data.Name, res.data.Tags ?? []);
          ctx.notify(`Saved: “${res.data.Name}”${res.data.Tags.length ? `, tagged ${res.data.Tags.join(', ')}` : ', no tags'}.`);
          await loadOverview();
        } catch (err) {
          if (!staleMessage(err)) handleError(ctx, err, form);
        }
      });
    });

    const archive = h('button', { type: 'button', id: 'team-archive', 'data-testid': 'team-archive' }, 'Archive team');
    archive.addEventListener('click', () => {
      void busy(archive, async () => {
        const target = teamStatus === 'Archived' ? 'Active' : 'Archived';
        try {
          const res = await ctx.api.updateTeam(teamId, { Status: target }, teamEtag);
          if (!ctx.isCurrent()) return;
          teamEtag = res.etag;
          ctx.notify(
            target === 'Archived'
              ? `“${res.data.Name}” is archived: off the leaderboard and graphs; it takes no new members or progress.`
              : `“${res.data.Name}” is active again.`,
          );
          await loadOverview();
        } catch (err) {
          if (!staleMessage(err)) handleError(ctx, err);
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
          await ctx.api.deleteTeam(teamId, teamEtag);
          if (!ctx.isCurrent()) return;
          navigateWithNotice('#/teams', `Team “${teamName}” deleted.`);
        } catch (err) {
          if (!staleMessage(err)) handleError(ctx, err);
        }
      });
    });

    const card = h(
      'div',
      { class: 'manage' },
      form,
      h('div', { class: 'card form' }, h('h3', null, 'Status'), h('p', { class: 'muted small', id: 'team-status-help' }, 'Archived teams stay listed but are not ranked, and refuse new members and progress.'), h('div', { class: 'actions-row' }, archive, del), deletePanel),
    );
    return {
      card,
      setTeam(n: string, t: string[], force = false): void {
        if (edited && !force) return;
        name.value = n;
        tags.value = t.join(', ');
        edited = false;
        form.dataset['loaded'] = 'true';
      },
      setStatus(status: string): void {
        archive.textContent = status === 'Archived' ? 'Restore team' : 'Archive team';
        archive.dataset['status'] = status;
      },
    };
  }

  function adminSection(): AdminControls & { setTeam(name: string, tags: string[], force?: boolean): void } {
    const manage = manageSection();
    const surveyButton = h(
      'button',
      { type: 'button', id: 'survey-switch', class: 'switch', 'aria-pressed': 'false', 'data-testid': 'survey-switch' },
      h('span', { class: 'switch-track', 'aria-hidden': 'true' }, h('span', { class: 'switch-thumb' })),
      ' Survey completed',
    );
    surveyButton.addEventListener('click', () => {
      void busy(surveyButton, async () => {
        try {
          const done = surveyButton.getAttribute('aria-pressed') !== 'true';
          const team = await ctx.api.setSurvey(teamId, done);
          if (!ctx.isCurrent()) return;
          surveyButton.setAttribute('aria-pressed', String(team.IsSurveyCompleted));
          ctx.notify(team.IsSurveyCompleted ? `${team.Name}’s survey is recorded as completed.` : `${team.Name}’s survey is no longer marked completed.`);
          await loadOverview();
        } catch (err) {
          handleError(ctx, err);
        }
      });
    });
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
          const task = tasks.get(taskId);
          const title = task ? `“${task.Title}”` : 'The task';
          ctx.notify(
            res.status === 201
              ? `${title} marked complete for ${teamName}${task ? ` (+${formatNumber(task.Points)} points)` : ''}.`
              : `${title} was already complete for ${teamName}.`,
          );
          completedAt.value = '';
          await Promise.all([loadOverview(), loadGraph(), loadCompletions()]);
        } catch (err) {
          handleError(ctx, err, taskForm);
        }
      });
    });

    void (async () => {
      try {
        const found = await trees;
        if (!ctx.isCurrent()) return;
        const groups: HTMLOptGroupElement[] = [];
        for (const d of found) {
          for (const level of [...d.Levels].sort((a, b) => a.Order - b.Order)) {
            for (const quest of [...level.Quests].sort((a, b) => a.Order - b.Order)) {
              const sorted = [...quest.Tasks].sort((a, b) => a.Order - b.Order);
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

    const section = h(
      'section',
      { class: 'admin-actions', 'aria-labelledby': 'admin-heading', 'data-testid': 'admin-actions' },
      h('h2', { id: 'admin-heading' }, 'Admin actions'),
      h(
        'div',
        { class: 'card switch-row' },
        switchButton,
        h('p', { id: 'admin-flag-help', class: 'muted small' }, 'Admin teams (the organization’s own management) are left out of the leaderboard and the graphs.'),
        surveyButton,
      ),
      manage.card,
      h('div', { class: 'admin-forms' }, memberForm, taskForm),
    );
    return {
      section,
      setAdminFlag(on: boolean): void {
        switchButton.setAttribute('aria-pressed', String(on));
      },
      setSurvey(done: boolean): void {
        surveyButton.setAttribute('aria-pressed', String(done));
      },
      setStatus: manage.setStatus,
      setTeam: manage.setTeam,
    };
  }

  void loadOverview();
  void loadGraph();
  void loadMembers();
  void loadCompletions();
  if (ctx.admin) void loadTeam();
}

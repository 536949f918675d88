// "My team" (`#/myteam`): the learner's dashboard. The caller's team (the session's
// e-mail names one of its members), each discipline as a path of levels (closed ones
// say what opens them), and each task with its action: an answer box with the attempts
// left, "Mark done" for self-check, a submit form for review with its state, and hints
// with their cost behind a confirmation. The service decides every action; the page
// reloads what it shows after each one (docs/learners.md, docs/submissions.md).

import { ApiError } from '../api';
import { busy, handleError, type Ctx } from '../context';
import { h, replaceChildren } from '../dom';
import { colorClass, formatDateTime, formatNumber, safeHttpUrl } from '../format';
import { attemptsByTask, attemptsLeft, latestSubmissions, openLevels } from '../learner';
import type { Completion, Discipline, DisciplineProgress, Overview, Task } from '../types';
import type { Submission } from './review';

interface UnlockedHint {
  TaskId: string;
  Index: number;
  Text: string;
  Cost: number;
  UnlockedAt: string;
}

interface AttemptResult {
  Correct: boolean;
  AttemptsLeft: number | null;
}

interface TeamState {
  overview: Overview;
  documents: Map<string, Discipline>;
  done: Set<string>;
  attempts: Map<string, number>;
  hints: Map<string, Map<number, UnlockedHint>>;
  submissions: Map<string, Submission>;
}

const enc = encodeURIComponent;

async function loadState(ctx: Ctx, teamId: string): Promise<TeamState> {
  const team = `/team/${enc(teamId)}`;
  const [overview, completions, attempts, hints, submissions] = await Promise.all([
    ctx.api.overview(teamId),
    ctx.api.completions(teamId),
    ctx.api.request<{ TaskId: string }[]>('GET', `${team}/attempts`),
    ctx.api.request<UnlockedHint[]>('GET', `${team}/hints`),
    ctx.api.request<Submission[]>('GET', `${team}/submissions`),
  ]);
  const docs = await Promise.all(overview.Disciplines.map((d) => ctx.api.discipline(d.DisciplineId)));
  const unlocked = new Map<string, Map<number, UnlockedHint>>();
  for (const hint of hints.data) {
    const of = unlocked.get(hint.TaskId) ?? new Map<number, UnlockedHint>();
    of.set(hint.Index, hint);
    unlocked.set(hint.TaskId, of);
  }
  return {
    overview,
    documents: new Map(docs.map((d) => [d.Id, d])),
    done: new Set(completions.map((c: Completion) => c.TaskId)),
    attempts: attemptsByTask(attempts.data),
    hints: unlocked,
    submissions: latestSubmissions(submissions.data),
  };
}

/** The submitted link, as a link only when it is http(s) (never `javascript:`). */
function linkTo(url: string): HTMLElement {
  const href = safeHttpUrl(url);
  return href ? h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, url) : h('span', null, url);
}

function plural(n: number, one: string, many: string): string {
  return `${formatNumber(n)} ${n === 1 ? one : many}`;
}

export function renderMyTeam(ctx: Ctx): void {
  const teamIds = ctx.session.TeamIds ?? [];
  const heading = h('h1', { tabindex: -1 }, 'My team');
  if (teamIds.length === 0) {
    replaceChildren(
      ctx.view,
      heading,
      h(
        'p',
        { 'data-testid': 'myteam-none' },
        'Your sign-in names no member of a team (teams are yours when one of their members has your e-mail address). ',
        h('a', { href: '#/leaderboard' }, 'Go to the leaderboard'),
        '.',
      ),
    );
    return;
  }
  const picker = h('select', { id: 'myteam-team', name: 'team', 'data-testid': 'myteam-team' }, teamIds.map((id) => h('option', { value: id }, id)));
  const pickerField = h('div', { class: 'field', hidden: teamIds.length < 2 }, h('label', { for: 'myteam-team' }, 'Team'), picker);
  const summary = h('div', { id: 'myteam-summary', 'aria-live': 'polite' });
  const paths = h('div', { id: 'myteam-paths', 'data-testid': 'myteam-paths' }, h('p', { class: 'muted' }, 'Loading…'));
  let teamId = teamIds[0] as string;

  /** Reloads the team's state and shows it; `focusTask` keeps the keyboard where it was. */
  async function load(focusTask: string | null = null): Promise<void> {
    try {
      const state = await loadState(ctx, teamId);
      if (!ctx.isCurrent()) return;
      show(state);
      if (focusTask) paths.querySelector<HTMLElement>(`li[data-task-id="${CSS.escape(focusTask)}"] .task-name`)?.focus();
    } catch (err) {
      handleError(ctx, err);
    }
  }

  function show(state: TeamState): void {
    const o = state.overview;
    for (const option of Array.from(picker.options)) if (option.value === o.TeamId) option.textContent = o.Name;
    replaceChildren(
      summary,
      h('h2', { id: 'myteam-name', 'data-testid': 'myteam-name' }, o.Name),
      h(
        'p',
        { class: 'badges' },
        h('span', { class: 'badge' }, 'Score ', h('strong', { 'data-testid': 'myteam-score' }, formatNumber(o.Score))),
        ' ',
        h('span', { class: 'badge', 'data-testid': 'myteam-rank' }, o.Rank === null ? 'Not ranked' : `Rank ${formatNumber(o.Rank)}`),
        ' ',
        h('a', { href: '#/leaderboard' }, 'Leaderboard'),
      ),
    );
    replaceChildren(
      paths,
      o.Disciplines.length ? o.Disciplines.map((d) => disciplinePath(d, state)) : h('p', { class: 'muted' }, 'No disciplines yet.'),
    );
    paths.dataset['loaded'] = 'true';
    paths.dataset['score'] = String(o.Score);
  }

  function disciplinePath(d: DisciplineProgress, state: TeamState): HTMLElement {
    const doc = state.documents.get(d.DisciplineId);
    const levels = doc ? [...doc.Levels].sort((a, b) => a.Order - b.Order) : [];
    const counts = new Map(d.Levels.map((l) => [l.LevelId, l]));
    const opened = openLevels(
      levels.map((l) => counts.get(l.Id) ?? { TasksCompleted: 0, TasksTotal: 0 }),
      doc?.Sequential ?? false,
    );
    const headingId = `myteam-d-${d.DisciplineId}`;
    return h(
      'section',
      { class: `card learner-discipline color-${colorClass(d.Color)}`, 'aria-labelledby': headingId, 'data-testid': 'myteam-discipline', 'data-discipline-id': d.DisciplineId },
      h('h2', { id: headingId }, h('span', { class: `dot color-${colorClass(d.Color)}`, 'aria-hidden': 'true' }), d.Title),
      h(
        'p',
        { class: 'muted small' },
        `${plural(d.TasksCompleted, 'task', 'tasks')} of ${formatNumber(d.TasksTotal)} done · ${formatNumber(d.PointsEarned)} of ${formatNumber(d.PointsTotal)} points`,
        doc?.Sequential ? ' · levels open one after another' : '',
      ),
      h(
        'ol',
        { class: 'levels learner-levels' },
        levels.map((level, i) => {
          const open = opened[i] ?? true;
          const previous = levels[i - 1];
          return h(
            'li',
            { class: open ? 'level' : 'level closed', 'data-testid': 'myteam-level', 'data-level-id': level.Id, 'data-open': String(open) },
            h('h3', { class: 'level-title' }, `Level ${i + 1}: ${level.Title}`, open ? null : h('span', { class: 'badge' }, 'Closed')),
            open || !previous
              ? null
              : h('p', { class: 'muted', 'data-testid': 'myteam-opens' }, `Opens when your team has completed every task of level ${i}: ${previous.Title}.`),
            [...level.Quests]
              .sort((a, b) => a.Order - b.Order)
              .map((quest) =>
                h(
                  'div',
                  { class: 'learner-quest' },
                  h('h4', null, quest.Title),
                  h(
                    'ul',
                    { class: 'learner-tasks' },
                    [...quest.Tasks].sort((a, b) => a.Order - b.Order).map((task) => taskItem(task, open, state)),
                  ),
                ),
              ),
          );
        }),
      ),
    );
  }

  function taskItem(task: Task, open: boolean, state: TeamState): HTMLElement {
    const done = state.done.has(task.Id);
    const kind = task.Check?.Kind ?? 'Admin';
    const li = h('li', {
      class: done ? 'learner-task done' : 'learner-task',
      'data-testid': 'myteam-task',
      'data-task-id': task.Id,
      'data-kind': kind,
      'data-state': done ? 'done' : open ? 'open' : 'closed',
    });
    li.append(
      h(
        'p',
        { class: 'task-head' },
        h('strong', { class: 'task-name', tabindex: -1 }, task.Title),
        ' ',
        h('span', { class: 'muted small' }, plural(task.Points, 'point', 'points')),
        ' ',
        done ? h('span', { class: 'badge', 'data-testid': 'myteam-done' }, 'Done') : null,
      ),
    );
    if (!done && open) li.append(action(task, kind, state));
    if (!done && !open) li.append(h('p', { class: 'muted small' }, 'Closed: this level is not open yet.'));
    if (task.Hints?.length) li.append(hintList(task, open && !done, state));
    return li;
  }

  function action(task: Task, kind: string, state: TeamState): HTMLElement {
    switch (kind) {
      case 'Answer':
        return answerForm(task, state);
      case 'Self':
        return selfButton(task);
      case 'Review':
        return reviewForm(task, state);
      default:
        return h('p', { class: 'muted small' }, 'An admin records this task when your team has done it.');
    }
  }

  function answerForm(task: Task, state: TeamState): HTMLElement {
    const id = `myteam-answer-${task.Id}`;
    const left = attemptsLeft(task.Check?.MaxAttempts, state.attempts.get(task.Id) ?? 0);
    const leftText = left === null ? 'Unlimited attempts.' : left === 0 ? 'No attempts left.' : `${plural(left, 'attempt', 'attempts')} left.`;
    const input = h('input', { id, name: 'answer', type: 'text', required: true, maxlength: 1000, autocomplete: 'off', 'aria-describedby': `${id}-left`, disabled: left === 0, 'data-testid': 'myteam-answer' });
    const form = h(
      'form',
      { class: 'learner-form', 'aria-label': `Answer “${task.Title}”` },
      h('label', { for: id }, 'Your answer'),
      h('div', { class: 'actions-row' }, input, h('button', { type: 'submit', class: 'primary', disabled: left === 0, 'data-testid': 'myteam-answer-submit' }, 'Check answer')),
      h('p', { id: `${id}-left`, class: 'muted small', 'data-testid': 'myteam-attempts-left' }, leftText),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void busy(form, async () => {
        try {
          const res = await ctx.api.request<AttemptResult>('POST', `/team/${enc(teamId)}/attempts`, { TaskId: task.Id, Answer: input.value });
          if (!ctx.isCurrent()) return;
          ctx.notify(res.data.Correct ? `Right! “${task.Title}” is done.` : `Not right. ${res.data.AttemptsLeft === null ? 'Try again.' : `${plural(res.data.AttemptsLeft, 'attempt', 'attempts')} left.`}`);
          await load(task.Id);
        } catch (err) {
          handleError(ctx, err, form);
        }
      });
    });
    return form;
  }

  function selfButton(task: Task): HTMLElement {
    const button = h('button', { type: 'button', class: 'primary', 'data-testid': 'myteam-mark-done', 'aria-label': `Mark “${task.Title}” done` }, 'Mark done');
    button.addEventListener('click', () => {
      void busy(button, async () => {
        try {
          await ctx.api.completeTask(teamId, task.Id);
          if (!ctx.isCurrent()) return;
          ctx.notify(`“${task.Title}” is done.`);
          await load(task.Id);
        } catch (err) {
          handleError(ctx, err);
        }
      });
    });
    return h('p', { class: 'actions' }, button);
  }

  function reviewForm(task: Task, state: TeamState): HTMLElement {
    const latest = state.submissions.get(task.Id);
    const status = latest
      ? h(
          'div',
          { class: 'learner-submission', 'data-testid': 'myteam-submission', 'data-state': latest.State },
          h(
            'p',
            null,
            h('strong', null, latest.State === 'Pending' ? 'Waiting for review' : latest.State === 'Rejected' ? 'Sent back' : 'Approved'),
            h('span', { class: 'muted small' }, ` · sent ${formatDateTime(latest.SubmittedAt)}`),
          ),
          latest.Text ? h('p', { class: 'pre-wrap muted' }, latest.Text) : null,
          latest.Url ? h('p', null, linkTo(latest.Url)) : null,
          latest.Comment ? h('p', { class: 'pre-wrap', 'data-testid': 'myteam-review-comment' }, 'Reviewer’s comment: ', latest.Comment) : null,
        )
      : null;
    if (latest?.State === 'Pending') return h('div', null, status);
    const base = `myteam-work-${task.Id}`;
    const text = h('textarea', { id: `${base}-text`, name: 'text', rows: 3, maxlength: 10000, 'data-testid': 'myteam-work-text' });
    const url = h('input', { id: `${base}-url`, name: 'url', type: 'url', maxlength: 2048, placeholder: 'https://…', 'data-testid': 'myteam-work-url' });
    const form = h(
      'form',
      { class: 'learner-form', 'aria-label': `Submit “${task.Title}” for review` },
      h('label', { for: text.id }, 'Your work', h('span', { class: 'muted small' }, ' (text, a link, or both)')),
      text,
      h('label', { for: url.id }, 'Link'),
      url,
      h('p', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'myteam-work-submit' }, latest ? 'Submit again' : 'Submit for review')),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const body: Record<string, string> = { TaskId: task.Id };
      if (text.value.trim()) body['Text'] = text.value;
      if (url.value.trim()) body['Url'] = url.value.trim();
      void busy(form, async () => {
        try {
          await ctx.api.request('POST', `/team/${enc(teamId)}/submissions`, body);
          if (!ctx.isCurrent()) return;
          ctx.notify(`Sent: an admin will review “${task.Title}”.`);
          await load(task.Id);
        } catch (err) {
          handleError(ctx, err, form);
        }
      });
    });
    return h('div', null, status, form);
  }

  function hintList(task: Task, canUnlock: boolean, state: TeamState): HTMLElement {
    const unlocked = state.hints.get(task.Id);
    return h(
      'div',
      { class: 'learner-hints' },
      h('h5', null, 'Hints'),
      h(
        'ol',
        null,
        (task.Hints ?? []).map((hint, index) => {
          const seen = unlocked?.get(index);
          const li = h('li', { 'data-testid': 'myteam-hint', 'data-index': index, 'data-unlocked': String(Boolean(seen)) });
          const cost = hint.Cost === 0 ? 'free' : `costs ${plural(hint.Cost, 'point', 'points')}`;
          if (seen) li.append(h('p', { class: 'pre-wrap', 'data-testid': 'myteam-hint-text' }, seen.Text));
          else if (!canUnlock) li.append(h('span', { class: 'muted small' }, `Hint ${index + 1} (${cost})`));
          else li.append(unlockControl(task, index, hint.Cost, cost));
          return li;
        }),
      ),
    );
  }

  /** "Unlock" asks first: paying points is not undone. */
  function unlockControl(task: Task, index: number, points: number, cost: string): HTMLElement {
    const box = h('div', { class: 'hint-unlock' });
    const ask = h('button', { type: 'button', class: 'secondary', 'data-testid': 'myteam-hint-unlock' }, `Unlock hint ${index + 1} (${cost})`);
    const question = h(
      'p',
      { id: `myteam-hint-q-${task.Id}-${index}` },
      points === 0 ? `Show hint ${index + 1} of “${task.Title}”?` : `Unlock hint ${index + 1} of “${task.Title}”? Your team’s score goes down by ${plural(points, 'point', 'points')}; this is not undone.`,
    );
    const confirm = h('button', { type: 'button', class: 'danger', 'data-testid': 'myteam-hint-confirm', 'aria-describedby': question.id }, points === 0 ? 'Show hint' : `Pay ${plural(points, 'point', 'points')}`);
    const cancel = h('button', { type: 'button', class: 'secondary', 'data-testid': 'myteam-hint-cancel' }, 'Cancel');
    const confirmation = h('div', { class: 'confirm', role: 'group', 'aria-label': 'Confirm the hint', 'data-testid': 'myteam-hint-confirmation', hidden: true }, question, h('p', { class: 'actions' }, confirm, ' ', cancel));
    ask.addEventListener('click', () => {
      ask.hidden = true;
      confirmation.hidden = false;
      confirm.focus();
    });
    cancel.addEventListener('click', () => {
      confirmation.hidden = true;
      ask.hidden = false;
      ask.focus();
    });
    confirm.addEventListener('click', () => {
      void busy(confirm, async () => {
        try {
          await ctx.api.request('POST', `/team/${enc(teamId)}/hints`, { TaskId: task.Id, Index: index });
          if (!ctx.isCurrent()) return;
          ctx.notify(`Hint ${index + 1} of “${task.Title}” unlocked.`);
          await load(task.Id);
        } catch (err) {
          if (err instanceof ApiError && err.status === 409) await load(task.Id);
          handleError(ctx, err);
        }
      });
    });
    box.append(ask, confirmation);
    return box;
  }

  picker.addEventListener('change', () => {
    teamId = picker.value;
    delete paths.dataset['loaded'];
    void load();
  });

  replaceChildren(
    ctx.view,
    heading,
    h('p', { class: 'muted' }, 'Your team’s disciplines, level by level: answer, mark done, or submit your work for review. Hints cost points.'),
    pickerField,
    summary,
    paths,
  );
  void load();
}

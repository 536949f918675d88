// The review queue (`#/review`, admins): work the teams submitted for `Review` tasks,
// oldest first; approve (the team completes the task) or reject with a comment.

import { apiBase, nextLink, stripOrigin } from '../api';
import { busy, handleError, type Ctx } from '../context';
import { h, replaceChildren, tableWrap } from '../dom';
import { formatDateTime, safeHttpUrl } from '../format';
import { teamHref } from '../router';

/** A submission as `GET /submission` lists it. */
export interface Submission {
  Id: string;
  TeamId: string;
  TaskId: string;
  MemberId: string;
  Text: string | null;
  Url: string | null;
  State: 'Pending' | 'Approved' | 'Rejected';
  SubmittedAt: string;
  DecidedAt: string | null;
  DecidedBy: string | null;
  Comment: string | null;
}

interface Names {
  teams: Map<string, string>;
  members: Map<string, { name: string; email: string }>;
  tasks: Map<string, string>;
}

interface NamedNode {
  Id: string;
  Title?: string;
  Levels?: NamedNode[];
  Quests?: NamedNode[];
  Tasks?: NamedNode[];
}

const PAGE_SIZE = 100;

function collectTasks(node: NamedNode, into: Map<string, string>): void {
  for (const task of node.Tasks ?? []) into.set(task.Id, task.Title ?? task.Id);
  for (const child of [...(node.Levels ?? []), ...(node.Quests ?? [])]) collectTasks(child, into);
}

/** Who and what the ids name: teams, members and every task the organization sees. */
async function loadNames(ctx: Ctx): Promise<Names> {
  const names: Names = { teams: new Map(), members: new Map(), tasks: new Map() };
  const [teams, members, disciplines] = await Promise.all([
    ctx.api.request<{ Id: string; Name: string }[]>('GET', '/team'),
    ctx.api.request<{ Id: string; GivenName: string; Email: string | null }[]>('GET', '/member', undefined, { query: { limit: 1000 } }),
    ctx.disciplines(),
  ]);
  for (const t of teams.data) names.teams.set(t.Id, t.Name);
  for (const m of members.data) names.members.set(m.Id, { name: m.GivenName, email: m.Email ?? '' });
  const documents = await Promise.all(disciplines.map((d) => ctx.api.request<NamedNode>('GET', `/discipline/${encodeURIComponent(d.Id)}`)));
  for (const doc of documents) collectTasks(doc.data, names.tasks);
  return names;
}

export function renderReview(ctx: Ctx): void {
  const state = h(
    'select',
    { id: 'review-state', name: 'state', 'data-testid': 'review-state' },
    h('option', { value: 'Pending', selected: true }, 'Waiting for review'),
    h('option', { value: 'Approved' }, 'Approved'),
    h('option', { value: 'Rejected' }, 'Rejected'),
    h('option', { value: '' }, 'All'),
  );
  const filters = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter the submissions', 'data-testid': 'review-filters' },
    h('div', { class: 'field' }, h('label', { for: 'review-state' }, 'Show'), state),
  );
  const body = h('tbody', { 'data-testid': 'review-body' });
  const table = h(
    'table',
    { id: 'review-table', class: 'data', 'data-testid': 'review-table' },
    h('caption', { class: 'visually-hidden' }, 'Submitted work, oldest first'),
    h(
      'thead',
      null,
      h('tr', null, h('th', { scope: 'col' }, 'Submitted'), h('th', { scope: 'col' }, 'Team and task'), h('th', { scope: 'col' }, 'Submitter'), h('th', { scope: 'col' }, 'Work'), h('th', { scope: 'col' }, 'Decision')),
    ),
    body,
  );
  const more = h('button', { type: 'button', class: 'secondary', hidden: true, 'data-testid': 'review-more' }, 'More');
  let next: string | null = null;
  let names: Names | null = null;

  function work(s: Submission): HTMLElement {
    const href = s.Url ? safeHttpUrl(s.Url) : null;
    return h(
      'div',
      { class: 'submission-work' },
      s.Text ? h('p', { class: 'pre-wrap', 'data-testid': 'review-text' }, s.Text) : null,
      s.Url
        ? h('p', null, href ? h('a', { href, target: '_blank', rel: 'noopener noreferrer', 'data-testid': 'review-link' }, s.Url) : h('span', null, s.Url))
        : null,
    );
  }

  function decided(s: Submission): HTMLElement {
    return h(
      'div',
      null,
      h('strong', { 'data-testid': 'review-decision' }, s.State),
      s.DecidedAt ? h('span', { class: 'muted small block' }, `${formatDateTime(s.DecidedAt)} · ${s.DecidedBy ?? ''}`) : null,
      s.Comment ? h('p', { class: 'pre-wrap', 'data-testid': 'review-comment' }, s.Comment) : null,
    );
  }

  function decisionForm(s: Submission, task: string, team: string, tr: HTMLTableRowElement): HTMLElement {
    const id = `review-comment-${s.Id}`;
    const comment = h('textarea', { id, name: 'comment', rows: 2, maxlength: 2000, 'data-testid': 'review-comment-input' });
    const approve = h('button', { type: 'submit', class: 'primary', value: 'approve', 'data-testid': 'review-approve' }, 'Approve');
    const reject = h('button', { type: 'submit', class: 'danger', value: 'reject', 'data-testid': 'review-reject' }, 'Reject');
    const form = h(
      'form',
      { class: 'review-decision', 'aria-label': `Decide on “${task}” by ${team}` },
      h('label', { for: id }, 'Comment', h('span', { class: 'muted small' }, ' (required to reject)')),
      comment,
      h('p', { class: 'actions' }, approve, ' ', reject),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const verb = (ev as SubmitEvent).submitter === reject ? 'reject' : 'approve';
      const text = comment.value.trim();
      void busy(form, async () => {
        try {
          const res = await ctx.api.request<Submission>('POST', `/submission/${encodeURIComponent(s.Id)}/${verb}`, text || verb === 'reject' ? { Comment: text } : undefined);
          if (!ctx.isCurrent()) return;
          ctx.notify(verb === 'approve' ? `Approved: “${task}” is complete for ${team}.` : `Sent back: ${team} may submit “${task}” again.`);
          tr.replaceWith(row(res.data));
        } catch (err) {
          handleError(ctx, err, form);
        }
      });
    });
    return form;
  }

  function row(s: Submission): HTMLTableRowElement {
    const known = names as Names;
    const team = known.teams.get(s.TeamId) ?? s.TeamId;
    const task = known.tasks.get(s.TaskId) ?? s.TaskId;
    const member = known.members.get(s.MemberId);
    const tr = h('tr', { 'data-testid': 'review-row', 'data-submission-id': s.Id, 'data-state': s.State });
    tr.append(
      h('td', null, h('time', { datetime: s.SubmittedAt }, formatDateTime(s.SubmittedAt))),
      h('th', { scope: 'row' }, h('a', { href: teamHref(s.TeamId) }, team), h('span', { class: 'block' }, task)),
      h('td', { 'data-testid': 'review-submitter' }, member ? member.name : s.MemberId, member?.email ? h('span', { class: 'muted small block' }, member.email) : null),
      h('td', null, work(s)),
      h('td', null, s.State === 'Pending' ? decisionForm(s, task, team, tr) : decided(s)),
    );
    return tr;
  }

  async function load(append: boolean): Promise<void> {
    try {
      if (!names) names = await loadNames(ctx);
      const res =
        append && next
          ? await ctx.api.request<Submission[]>('GET', stripOrigin(next, apiBase(window.location.pathname)))
          : await ctx.api.request<Submission[]>('GET', '/submission', undefined, { query: { limit: PAGE_SIZE, state: state.value || null } });
      if (!ctx.isCurrent()) return;
      next = nextLink(res.link);
      const rows = res.data.map(row);
      if (append) body.append(...rows);
      else body.replaceChildren(...(rows.length ? rows : [h('tr', null, h('td', { colspan: 5, class: 'empty' }, 'Nothing to review.'))]));
      more.hidden = next === null;
      table.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  state.addEventListener('change', () => {
    delete table.dataset['loaded'];
    void load(false);
  });
  filters.addEventListener('submit', (ev) => ev.preventDefault());
  more.addEventListener('click', () => void busy(more, () => load(true)));

  replaceChildren(
    ctx.view,
    h('h1', { tabindex: -1 }, 'Review'),
    h('p', { class: 'muted' }, 'Work the teams submitted for review tasks, oldest first. Approving completes the task for the team (at the time the work was submitted); rejecting sends it back with your comment, and the team may submit again.'),
    filters,
    tableWrap('Submitted work', table),
    h('p', { class: 'actions' }, more),
  );
  void load(false);
}

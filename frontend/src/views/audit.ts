// The audit log (`#/audit`, admins): every change made in the organization, newest
// first, filtered by actor, action, target and time, a page of 100 at a time.

import { apiBase, nextLink, stripOrigin } from '../api';
import { busy, csvButton, handleError, type Ctx } from '../context';
import { h, replaceChildren, tableWrap } from '../dom';
import { formatDateTime, localInputToIso } from '../format';

/** An entry as `GET /audit` lists it. */
export interface AuditEntry {
  Id: string;
  At: string;
  Actor: string;
  ActorRole: string | null;
  ActorVia: string;
  Action: string;
  TargetType: string;
  TargetId: string | null;
  RequestId: string | null;
  Changes: Record<string, { Before: unknown; After: unknown }>;
}

const PAGE_SIZE = 100;

function shown(value: unknown): string {
  if (value === null || value === undefined) return '–';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function changesCell(changes: AuditEntry['Changes']): HTMLElement {
  const names = Object.keys(changes);
  if (!names.length) return h('span', { class: 'muted' }, 'no field');
  return h(
    'ul',
    { class: 'plain' },
    ...names.map((name) => h('li', null, h('strong', null, name), ': ', shown(changes[name]?.Before), ' → ', shown(changes[name]?.After))),
  );
}

export function renderAudit(ctx: Ctx): void {
  const field = (id: string, label: string, input: HTMLElement): HTMLElement => h('div', { class: 'field' }, h('label', { for: id }, label), input);
  const actor = h('input', { id: 'audit-actor', type: 'text', autocomplete: 'off', 'data-testid': 'audit-actor' });
  const action = h('input', { id: 'audit-action', type: 'text', autocomplete: 'off', placeholder: 'team.renamed', 'data-testid': 'audit-action' });
  const target = h('input', { id: 'audit-target', type: 'text', autocomplete: 'off', placeholder: 'an id', 'data-testid': 'audit-target' });
  const from = h('input', { id: 'audit-from', type: 'datetime-local', 'data-testid': 'audit-from' });
  const to = h('input', { id: 'audit-to', type: 'datetime-local', 'data-testid': 'audit-to' });
  const filters = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter the audit log', 'data-testid': 'audit-filters' },
    field('audit-actor', 'Actor', actor),
    field('audit-action', 'Action', action),
    field('audit-target', 'Target id', target),
    field('audit-from', 'From', from),
    field('audit-to', 'To', to),
    h('div', { class: 'field actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'audit-apply' }, 'Apply')),
  );
  const body = h('tbody', { 'data-testid': 'audit-body' });
  const table = h(
    'table',
    { id: 'audit-table', class: 'data', 'data-testid': 'audit-table' },
    h('caption', { class: 'visually-hidden' }, 'Changes made in the organization'),
    h(
      'thead',
      null,
      h('tr', null, h('th', { scope: 'col' }, 'When'), h('th', { scope: 'col' }, 'Who'), h('th', { scope: 'col' }, 'Action'), h('th', { scope: 'col' }, 'Target'), h('th', { scope: 'col' }, 'Changes')),
    ),
    body,
  );
  const more = h('button', { type: 'button', class: 'secondary', hidden: true, 'data-testid': 'audit-more' }, 'Older entries');
  let next: string | null = null;

  function query(): Record<string, string | number | null> {
    return {
      limit: PAGE_SIZE,
      actor: actor.value.trim() || null,
      action: action.value.trim() || null,
      target: target.value.trim() || null,
      from: localInputToIso(from.value),
      to: localInputToIso(to.value),
    };
  }

  function row(e: AuditEntry): HTMLTableRowElement {
    return h(
      'tr',
      { 'data-testid': 'audit-row', 'data-entry-id': e.Id },
      h('td', null, h('time', { datetime: e.At }, formatDateTime(e.At))),
      h('td', null, e.Actor, h('span', { class: 'muted small block' }, `${e.ActorRole ?? '–'} · ${e.ActorVia}`)),
      h('th', { scope: 'row' }, h('code', null, e.Action)),
      h('td', null, e.TargetType, e.TargetId ? h('span', { class: 'muted small block' }, e.TargetId) : null),
      h('td', null, changesCell(e.Changes)),
    );
  }

  async function load(append: boolean): Promise<void> {
    try {
      const res =
        append && next
          ? await ctx.api.request<AuditEntry[]>('GET', stripOrigin(next, apiBase(window.location.pathname)))
          : await ctx.api.request<AuditEntry[]>('GET', '/audit', undefined, { query: query() });
      if (!ctx.isCurrent()) return;
      next = nextLink(res.link);
      const rows = res.data.map(row);
      if (append) body.append(...rows);
      else body.replaceChildren(...(rows.length ? rows : [h('tr', null, h('td', { colspan: 5, class: 'empty' }, 'No change matches.'))]));
      more.hidden = next === null;
      table.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err, filters);
    }
  }

  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void busy(filters, () => load(false));
  });
  more.addEventListener('click', () => void busy(more, () => load(true)));

  replaceChildren(
    ctx.view,
    h('h1', { tabindex: -1 }, 'Audit log'),
    h('p', { class: 'muted' }, 'Every change made in the organization — through the API, this dashboard or a provider — newest first. Nothing here can be edited or deleted.'),
    filters,
    tableWrap('Audit log', table),
    h('p', { class: 'actions' }, more, ' ', csvButton(ctx, 'audit-csv', 'Download CSV (this filter, 1,000 entries)', '/audit', () => ({ ...query(), limit: 1000 }))),
  );
  void load(false);
}

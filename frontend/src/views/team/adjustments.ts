// "Adjustments": manual changes of the team's score with their reasons; admins add one
// (points, reason, optional time) and withdraw one here. Members read the list.

import { busy, csvButton, handleError } from '../../context';
import { h, tableWrap } from '../../dom';
import { formatDateTime, formatNumber, localInputToIso } from '../../format';
import type { TeamPage } from './page';

/** An adjustment as `GET /team/{id}/adjustments` lists it. */
export interface Adjustment {
  Id: string;
  TeamId: string;
  Points: number;
  Reason: string;
  At: string;
  RecordedBy: string | null;
  CreatedAt: string;
  WithdrawnAt: string | null;
  WithdrawnBy: string | null;
  Score: number | null;
}

export interface AdjustmentsSection {
  section: HTMLElement;
  load(): Promise<void>;
}

function signed(points: number): string {
  return `${points > 0 ? '+' : '−'}${formatNumber(Math.abs(points))}`;
}

export function adjustmentsSection(page: TeamPage): AdjustmentsSection {
  const { ctx, teamId } = page;
  const path = `/team/${encodeURIComponent(teamId)}/adjustments`;
  const body = h('tbody', { 'data-testid': 'adjustments-body' });
  const table = h(
    'table',
    { id: 'adjustments-table', class: 'data', 'data-testid': 'adjustments-table' },
    h('caption', { class: 'visually-hidden' }, 'Manual changes of the team’s score'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col' }, 'At'),
        h('th', { scope: 'col', class: 'num' }, 'Points'),
        h('th', { scope: 'col' }, 'Reason'),
        ctx.admin ? h('th', { scope: 'col' }, 'By') : null,
        h('th', { scope: 'col' }, 'Status'),
        ctx.admin ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')) : null,
      ),
    ),
    body,
  );

  function row(a: Adjustment): HTMLTableRowElement {
    const withdrawn = a.WithdrawnAt !== null;
    return h(
      'tr',
      { 'data-adjustment-id': a.Id, 'data-testid': 'adjustment-row', class: withdrawn ? 'muted' : '' },
      h('td', null, h('time', { datetime: a.At }, formatDateTime(a.At))),
      h('td', { class: 'num' }, withdrawn ? h('s', null, signed(a.Points)) : signed(a.Points)),
      h('th', { scope: 'row' }, a.Reason),
      ctx.admin ? h('td', null, a.RecordedBy ?? '–') : null,
      h('td', { 'data-testid': 'adjustment-status' }, withdrawn ? `Withdrawn ${formatDateTime(a.WithdrawnAt)}` : 'Counts'),
      ctx.admin
        ? h(
            'td',
            null,
            withdrawn
              ? null
              : h(
                  'button',
                  {
                    type: 'button',
                    class: 'small',
                    'data-action': 'withdraw-adjustment',
                    'aria-label': `Withdraw the adjustment “${a.Reason}”`,
                    onclick: (ev: Event) => void withdraw(ev.currentTarget as HTMLButtonElement, a),
                  },
                  'Withdraw',
                ),
          )
        : null,
    );
  }

  async function withdraw(button: HTMLButtonElement, a: Adjustment): Promise<void> {
    if (!window.confirm(`Withdraw ${signed(a.Points)} points (“${a.Reason}”) from ${page.name}?`)) return;
    await busy(button, async () => {
      try {
        await ctx.api.request('DELETE', `${path}/${encodeURIComponent(a.Id)}`);
        if (!ctx.isCurrent()) return;
        ctx.notify(`The adjustment of ${signed(a.Points)} points was withdrawn from ${page.name}.`);
        await Promise.all([page.reload.overview(), page.reload.graph(), load()]);
      } catch (err) {
        handleError(ctx, err);
      }
    });
  }

  async function load(): Promise<void> {
    try {
      const list = await ctx.api.allPages<Adjustment>(path);
      if (!ctx.isCurrent()) return;
      const newest = [...list].reverse();
      const columns = ctx.admin ? 6 : 4;
      body.replaceChildren(
        ...(newest.length ? newest.map(row) : [h('tr', null, h('td', { colspan: columns, class: 'empty' }, 'No adjustment.'))]),
      );
      table.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  return {
    section: h(
      'section',
      { 'aria-labelledby': 'adjustments-heading' },
      h('h2', { id: 'adjustments-heading' }, 'Adjustments'),
      ctx.admin ? adjustForm(page, load) : null,
      tableWrap('Adjustments', table),
      h('p', { class: 'actions' }, csvButton(ctx, 'team-adjustments-csv', 'Download CSV', path, () => ({}))),
    ),
    load,
  };
}

/** "Adjust the score": points (either sign), a reason, and optionally when it counts. */
function adjustForm(page: TeamPage, reloadList: () => Promise<void>): HTMLFormElement {
  const { ctx, teamId } = page;
  const points = h('input', { id: 'adjust-points', name: 'Points', type: 'number', step: '1', required: true, 'data-testid': 'adjust-points' });
  const reason = h('input', { id: 'adjust-reason', name: 'Reason', type: 'text', required: true, maxlength: '500', autocomplete: 'off', 'data-testid': 'adjust-reason' });
  const at = h('input', { id: 'adjust-at', name: 'At', type: 'datetime-local', 'aria-describedby': 'adjust-at-help', 'data-testid': 'adjust-at' });
  const form = h(
    'form',
    { id: 'adjust-form', class: 'card form inline-form', 'data-testid': 'adjust-form', 'aria-labelledby': 'adjust-heading' },
    h('h3', { id: 'adjust-heading' }, 'Adjust the score'),
    h('div', { class: 'field' }, h('label', { for: 'adjust-points' }, 'Points (negative: a penalty)'), points),
    h('div', { class: 'field wide' }, h('label', { for: 'adjust-reason' }, 'Reason'), reason),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'adjust-at' }, 'Counts at (optional)'),
      at,
      h('span', { id: 'adjust-at-help', class: 'muted small' }, 'Leave empty for now.'),
    ),
    h('div', { class: 'field actions' }, h('button', { type: 'submit', id: 'adjust-submit', class: 'primary', 'data-testid': 'adjust-submit' }, 'Adjust')),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const value = Number(points.value);
    if (!Number.isInteger(value) || value === 0) {
      points.setAttribute('aria-invalid', 'true');
      ctx.showError(new Error('Give a whole number of points other than 0.'));
      points.focus();
      return;
    }
    void busy(form, async () => {
      try {
        const when = localInputToIso(at.value);
        const payload = { Points: value, Reason: reason.value.trim(), ...(when ? { At: when } : {}) };
        await ctx.api.request('POST', `/team/${encodeURIComponent(teamId)}/adjustments`, payload);
        if (!ctx.isCurrent()) return;
        form.reset();
        ctx.notify(`${signed(value)} points for ${page.name}.`);
        await Promise.all([page.reload.overview(), page.reload.graph(), reloadList()]);
      } catch (err) {
        handleError(ctx, err, form);
      }
    });
  });
  return form;
}

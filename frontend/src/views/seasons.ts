// Seasons (`#/seasons`, admins): the organization's time-boxed competitions, created,
// revealed (the freeze ended now) and deleted here; the leaderboard's season switch
// ranks by them (views/competition.ts).

import { busy, fillDisciplineSelect, handleError, type Ctx } from '../context';
import { h, replaceChildren, tableWrap } from '../dom';
import { formatDateTime, localInputToIso } from '../format';
import type { SeasonSummary } from './competition';

/** A season as `GET /season` lists it. */
export interface Season extends SeasonSummary {
  StartsAt: string;
  EndsAt: string;
  FreezesAt: string | null;
  RevealedAt: string | null;
  DisciplineId: string | null;
}

/** The body of `POST /season` from the form's values (local times of the browser). */
export function seasonBody(values: { name: string; starts: string; freezes: string; ends: string; discipline: string }): Record<string, string> {
  const body: Record<string, string> = { Name: values.name.trim() };
  const starts = localInputToIso(values.starts);
  const ends = localInputToIso(values.ends);
  const freezes = localInputToIso(values.freezes);
  if (starts) body['StartsAt'] = starts;
  if (ends) body['EndsAt'] = ends;
  if (freezes) body['FreezesAt'] = freezes;
  if (values.discipline) body['DisciplineId'] = values.discipline;
  return body;
}

export function renderSeasons(ctx: Ctx): void {
  const body = h('tbody', { 'data-testid': 'seasons-body' });
  const table = h(
    'table',
    { id: 'seasons-table', class: 'data', 'data-testid': 'seasons-table' },
    h('caption', { class: 'visually-hidden' }, 'Seasons of the organization'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col' }, 'Season'),
        h('th', { scope: 'col' }, 'Starts'),
        h('th', { scope: 'col' }, 'Freezes'),
        h('th', { scope: 'col' }, 'Ends'),
        h('th', { scope: 'col' }, 'Phase'),
        h('th', { scope: 'col' }, 'Actions'),
      ),
    ),
    body,
  );

  async function load(): Promise<void> {
    try {
      const res = await ctx.api.request<Season[]>('GET', '/season');
      if (!ctx.isCurrent()) return;
      body.replaceChildren(
        ...(res.data.length ? res.data.map(row) : [h('tr', null, h('td', { colspan: 6, class: 'empty' }, 'No season yet.'))]),
      );
      table.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  function row(s: Season): HTMLTableRowElement {
    const reveal = h('button', { type: 'button', class: 'secondary', 'data-testid': 'season-reveal' }, 'Reveal now');
    const remove = h('button', { type: 'button', class: 'danger', 'data-testid': 'season-delete' }, 'Delete');
    reveal.addEventListener('click', () =>
      void busy(reveal, async () => {
        try {
          await ctx.api.request('POST', `/season/${encodeURIComponent(s.Id)}/reveal`);
          if (!ctx.isCurrent()) return;
          ctx.notify(`“${s.Name}” is revealed: everyone sees the live standings.`);
          await load();
        } catch (err) {
          handleError(ctx, err);
        }
      }),
    );
    remove.addEventListener('click', () => {
      if (!window.confirm(`Delete the season “${s.Name}”? The completions it counted stay.`)) return;
      void busy(remove, async () => {
        try {
          await ctx.api.request('DELETE', `/season/${encodeURIComponent(s.Id)}`);
          if (!ctx.isCurrent()) return;
          ctx.notify(`“${s.Name}” is deleted.`);
          await load();
        } catch (err) {
          handleError(ctx, err);
        }
      });
    });
    return h(
      'tr',
      { 'data-testid': 'season-row', 'data-season-id': s.Id, 'data-phase': s.Phase },
      h('th', { scope: 'row' }, s.Name),
      h('td', null, formatDateTime(s.StartsAt)),
      h('td', null, s.FreezesAt ? formatDateTime(s.FreezesAt) : '–'),
      h('td', null, formatDateTime(s.EndsAt)),
      h('td', { 'data-testid': 'season-phase' }, s.Phase),
      h('td', { class: 'actions' }, s.Phase === 'Frozen' ? reveal : null, ' ', remove),
    );
  }

  replaceChildren(
    ctx.view,
    h('h1', { tabindex: -1 }, 'Seasons'),
    h(
      'p',
      { class: 'muted' },
      'A season ranks the completions made between its start and its end. From its freeze on, members see the standings as they were at the freeze until it ends or you reveal it; admins keep seeing them live.',
    ),
    createForm(ctx, load),
    tableWrap('Seasons', table),
  );
  void load();
}

function createForm(ctx: Ctx, reload: () => Promise<void>): HTMLFormElement {
  const field = (id: string, label: string, input: HTMLElement, wide = false): HTMLElement =>
    h('div', { class: wide ? 'field wide' : 'field' }, h('label', { for: id }, label), input);
  const name = h('input', { id: 'season-name', type: 'text', required: true, maxlength: '200', autocomplete: 'off', 'data-testid': 'season-name' });
  const starts = h('input', { id: 'season-starts', type: 'datetime-local', required: true, 'data-testid': 'season-starts' });
  const freezes = h('input', { id: 'season-freezes', type: 'datetime-local', 'data-testid': 'season-freezes' });
  const ends = h('input', { id: 'season-ends', type: 'datetime-local', required: true, 'data-testid': 'season-ends' });
  const discipline = h('select', { id: 'season-discipline', 'data-testid': 'season-discipline' }, h('option', { value: '' }, 'All disciplines'));
  const form = h(
    'form',
    { id: 'season-form', class: 'card form inline-form', 'data-testid': 'season-form', 'aria-labelledby': 'season-form-heading' },
    h('h2', { id: 'season-form-heading' }, 'New season'),
    field('season-name', 'Name', name, true),
    field('season-starts', 'Starts', starts),
    field('season-freezes', 'Freezes (optional)', freezes),
    field('season-ends', 'Ends', ends),
    field('season-discipline', 'Discipline', discipline),
    h('div', { class: 'field actions' }, h('button', { type: 'submit', class: 'primary', 'data-testid': 'season-create' }, 'Create season')),
  );
  void fillDisciplineSelect(ctx, discipline, null);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const payload = seasonBody({ name: name.value, starts: starts.value, freezes: freezes.value, ends: ends.value, discipline: discipline.value });
    void busy(form, async () => {
      try {
        await ctx.api.request('POST', '/season', payload);
        if (!ctx.isCurrent()) return;
        ctx.notify(`The season “${payload['Name']}” is created.`);
        form.reset();
        await reload();
      } catch (err) {
        handleError(ctx, err, form);
      }
    });
  });
  return form;
}

// Onboarding: teams from a CSV file (or pasted rows). First a dry run
// (`POST /team/bulk?dryRun=true`: everything checked, nothing written) shows what
// would be created or every problem by line; then the import, all or nothing.

import { ApiError } from '../api';
import { busy, handleError, type Ctx } from '../context';
import { h, progressBar, replaceChildren, tableWrap } from '../dom';
import { formatNumber } from '../format';
import { teamHref } from '../router';
import type { Team } from '../types';

export const CSV_HEADER = 'team,email,givenName,tags';

export function renderOnboarding(ctx: Ctx): void {
  const file = h('input', { id: 'onboarding-file', type: 'file', accept: '.csv,text/csv', 'data-testid': 'onboarding-file' });
  const text = h('textarea', { id: 'onboarding-csv', name: 'csv', rows: 10, spellcheck: 'false', 'aria-describedby': 'onboarding-help', 'data-testid': 'onboarding-csv' }, `${CSV_HEADER}\n`);
  const check = h('button', { type: 'submit', id: 'onboarding-check', class: 'primary', 'data-testid': 'onboarding-check' }, 'Check');
  const form = h(
    'form',
    { id: 'onboarding-form', class: 'card form', novalidate: true, 'aria-labelledby': 'onboarding-form-heading' },
    h('h2', { id: 'onboarding-form-heading', class: 'h3' }, '1. Choose a CSV file or paste rows'),
    h('div', { class: 'field' }, h('label', { for: 'onboarding-file' }, 'CSV file (UTF-8)'), file),
    h('div', { class: 'field wide' }, h('label', { for: 'onboarding-csv' }, 'Rows'), text),
    h(
      'p',
      { id: 'onboarding-help', class: 'muted small' },
      'Header ',
      h('code', null, CSV_HEADER),
      ', then one row a member: members are found by e-mail or created; tags are separated by “;”. A row with only a team name declares an empty team. Nothing is written until you import.',
    ),
    h('div', { class: 'actions-row' }, check),
  );
  const preview = h('section', { id: 'onboarding-preview', 'aria-labelledby': 'onboarding-preview-heading', 'data-testid': 'onboarding-preview', hidden: true });
  const progress = h('div', { id: 'onboarding-progress', 'aria-live': 'polite', 'data-testid': 'onboarding-progress' });

  replaceChildren(
    ctx.view,
    h('h1', { tabindex: -1 }, 'Onboarding'),
    h('p', null, 'Create many teams at once. The import is all or nothing: a file with a problem creates no team.'),
    form,
    preview,
    progress,
  );

  file.addEventListener('change', () => {
    const f = file.files?.[0];
    if (!f) return;
    void f.text().then((t) => {
      text.value = t.replace(/^\uFEFF/, '');
      ctx.notify(`Loaded “${f.name}” (${formatNumber(t.split(/\r?\n/).filter((l) => l.trim()).length)} lines). Check it before importing.`);
    });
  });
  text.addEventListener('input', () => {
    preview.hidden = true;
  });

  function showProgress(label: string, fraction: number | null): void {
    replaceChildren(
      progress,
      h('p', { class: 'small' }, label),
      fraction === null ? h('div', { class: 'bar indeterminate', role: 'progressbar', 'aria-label': label }, h('div', { class: 'bar-fill' })) : progressBar(fraction * 100, label, 'onboarding-progress-bar'),
    );
  }

  function teamsTable(teams: Team[], created: boolean): HTMLElement {
    const shown = teams.slice(0, 200);
    return tableWrap(
      created ? 'Created teams' : 'Teams to create',
      h(
        'table',
        { class: 'data', id: created ? 'onboarding-created' : 'onboarding-plan', 'data-testid': created ? 'onboarding-created' : 'onboarding-plan' },
        h('caption', { class: 'visually-hidden' }, created ? 'Created teams' : 'Teams the import would create'),
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Team'), h('th', { scope: 'col', class: 'num' }, 'Members'), h('th', { scope: 'col' }, 'Tags'))),
        h(
          'tbody',
          null,
          shown.map((t) =>
            h(
              'tr',
              { 'data-testid': 'onboarding-team' },
              h('th', { scope: 'row' }, created ? h('a', { href: teamHref(t.Id) }, t.Name) : t.Name),
              h('td', { class: 'num' }, formatNumber(t.MemberCount)),
              h('td', null, (t.Tags ?? []).join(', ')),
            ),
          ),
          teams.length > shown.length ? h('tr', null, h('td', { colspan: 3, class: 'muted' }, `… and ${formatNumber(teams.length - shown.length)} more`)) : null,
        ),
      ),
    );
  }

  async function importNow(csv: string, button: HTMLButtonElement): Promise<void> {
    await busy(button, async () => {
      try {
        showProgress('Uploading…', 0);
        const res = await ctx.api.bulk(csv, false, (f) => showProgress(f < 1 ? 'Uploading…' : 'Creating the teams…', f < 1 ? f : null));
        if (!ctx.isCurrent()) return;
        replaceChildren(progress);
        replaceChildren(
          preview,
          h('h2', { id: 'onboarding-preview-heading', class: 'h3' }, `Created ${formatNumber(res.data.length)} teams`),
          teamsTable(res.data, true),
        );
        ctx.notify(`Imported: ${formatNumber(res.data.length)} teams created.`);
      } catch (err) {
        replaceChildren(progress);
        handleError(ctx, err);
      }
    });
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const csv = text.value;
    void busy(form, async () => {
      ctx.clearMessages();
      preview.hidden = true;
      try {
        showProgress('Checking…', 0);
        const res = await ctx.api.bulk(csv, true, (f) => showProgress(f < 1 ? 'Uploading for the check…' : 'Checking…', f < 1 ? f : null));
        if (!ctx.isCurrent()) return;
        replaceChildren(progress);
        const go = h('button', { type: 'button', id: 'onboarding-import', class: 'primary', 'data-testid': 'onboarding-import' }, `Import ${formatNumber(res.data.length)} teams`);
        go.addEventListener('click', () => void importNow(csv, go));
        replaceChildren(
          preview,
          h('h2', { id: 'onboarding-preview-heading', class: 'h3' }, '2. Preview: no problem found'),
          h('p', { 'data-testid': 'onboarding-summary' }, `${formatNumber(res.data.length)} teams with ${formatNumber(res.data.reduce((n, t) => n + t.MemberCount, 0))} memberships would be created. Nothing is written yet.`),
          teamsTable(res.data, false),
          h('div', { class: 'actions-row' }, go),
        );
        preview.hidden = false;
        go.focus();
      } catch (err) {
        replaceChildren(progress);
        if (err instanceof ApiError && (err.status === 422 || err.status === 409) && err.problem?.errors?.length) {
          const errors = err.problem.errors;
          replaceChildren(
            preview,
            h('h2', { id: 'onboarding-preview-heading', class: 'h3' }, `2. Preview: ${formatNumber(errors.length)} ${errors.length === 1 ? 'problem' : 'problems'}, nothing can be imported yet`),
            h(
              'ul',
              { class: 'problems', id: 'onboarding-errors', 'data-testid': 'onboarding-errors' },
              errors.map((e) => h('li', { 'data-field': e.field ?? '', 'data-testid': 'onboarding-error' }, h('strong', null, `${e.field ?? ''}: `), e.message ?? '')),
            ),
            h('p', { class: 'muted small' }, 'Fix the rows above (or the file) and check again.'),
          );
          preview.hidden = false;
          text.setAttribute('aria-invalid', 'true');
          text.focus();
        } else {
          handleError(ctx, err);
        }
      }
    });
  });
}

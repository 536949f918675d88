// The discipline editor: a structured form over the discipline document (levels →
// quests → tasks, resources on every node). Saves with POST (new) or PUT with
// If-Match (edit); the API's field errors (`Levels[1].Quests[0].Tasks[2].Title`) are
// shown next to the input they name.

import { ApiError } from '../api';
import { busy, handleError, navigateWithNotice, type Ctx } from '../context';
import { h, replaceChildren } from '../dom';
import { describeProblem } from '../format';
import { disciplineHref } from '../router';
import type { Discipline } from '../types';

export const COLORS = ['Purple', 'Green', 'Red'] as const;

export interface EResource { Id?: string; Title: string; Description: string; Url: string; Kind: string }
/** `Check` and `Hints` are carried through as read (a save keeps a task's answers). */
export interface ETask { Id?: string; Title: string; Description: string; Points: number; Resources: EResource[]; Check?: Json; Hints?: Json[] }
export interface EQuest { Id?: string; Title: string; Description: string; Tasks: ETask[]; Resources: EResource[] }
export interface ELevel { Id?: string; Title: string; Description: string; Quests: EQuest[]; Resources: EResource[] }
export interface EDoc { Title: string; Description: string; Color: string | null; Levels: ELevel[]; Resources: EResource[]; Sequential?: boolean }

type Json = Record<string, unknown>;
const kept = (o: Json, name: string): Json => (pick(o, name) !== undefined ? { [name]: pick(o, name) } : {});
const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter((x): x is Json => !!x && typeof x === 'object') : []);
const byOrder = (items: Json[]): Json[] => [...items].sort((a, b) => Number(a['Order'] ?? 0) - Number(b['Order'] ?? 0));
/** A value from either spelling (input names ignore case; exports use PascalCase). */
const pick = (o: Json, name: string): unknown => o[name] ?? o[name.toLowerCase()] ?? o[name.charAt(0).toLowerCase() + name.slice(1)];

/** The editable document of a discipline (as GET returns it, or an imported file). */
export function toEditable(doc: Json, keepIds: boolean): EDoc {
  const id = (o: Json): { Id?: string } => (keepIds && typeof o['Id'] === 'string' ? { Id: o['Id'] } : {});
  const res = (o: Json): EResource[] =>
    byOrder(list(pick(o, 'Resources'))).map((r) => ({ ...id(r), Title: str(pick(r, 'Title')), Description: str(pick(r, 'Description')), Url: str(pick(r, 'Url')), Kind: str(pick(r, 'Kind'), 'Link') }));
  return {
    Title: str(pick(doc, 'Title')),
    Description: str(pick(doc, 'Description')),
    Color: typeof pick(doc, 'Color') === 'string' ? (pick(doc, 'Color') as string) : null,
    ...kept(doc, 'Sequential'),
    Resources: res(doc),
    Levels: byOrder(list(pick(doc, 'Levels'))).map((l) => ({
      ...id(l),
      Title: str(pick(l, 'Title')),
      Description: str(pick(l, 'Description')),
      Resources: res(l),
      Quests: byOrder(list(pick(l, 'Quests'))).map((q) => ({
        ...id(q),
        Title: str(pick(q, 'Title')),
        Description: str(pick(q, 'Description')),
        Resources: res(q),
        Tasks: byOrder(list(pick(q, 'Tasks'))).map((t) => ({
          ...id(t),
          Title: str(pick(t, 'Title')),
          Description: str(pick(t, 'Description')),
          Points: Number(pick(t, 'Points') ?? 0),
          Resources: res(t),
          ...kept(t, 'Check'),
          ...kept(t, 'Hints'),
        })),
      })),
    })),
  };
}

export type CheckKind = 'Admin' | 'Self' | 'Answer' | 'Review';
const CHECK_KINDS = [
  ['Admin', 'An admin records it'],
  ['Self', 'Self-check: a member marks it done'],
  ['Answer', 'Answer: a member types the answer'],
  ['Review', 'Review: a member submits work, an admin approves it'],
] as const;
const MATCHES = [
  ['Exact', 'Exact'],
  ['IgnoreCase', 'Ignore case and surrounding spaces'],
  ['Regex', 'Regular expression (RE2)'],
] as const;
/** An accepted answer: a new one by its `Value`, a stored one by its `Digest` (sent back as read). */
export interface EAnswer { Value?: string; Digest?: string; Match?: string }
export interface ECheck { Kind: CheckKind; MaxAttempts?: number | null; Answers?: EAnswer[] }
export interface EHint { Text: string; Cost: number }

/** The task's check as the editor edits it (stored on the task: edits are kept). */
export function editableCheck(task: ETask): ECheck {
  const raw = (task.Check ?? {}) as Json;
  const kind = str(pick(raw, 'Kind'), 'Admin');
  const check: ECheck = { Kind: (CHECK_KINDS.some(([k]) => k === kind) ? kind : 'Admin') as CheckKind };
  if (check.Kind === 'Answer') {
    const max = pick(raw, 'MaxAttempts');
    check.MaxAttempts = typeof max === 'number' ? max : null;
    check.Answers = list(pick(raw, 'Answers')).map((a) => {
      const digest = pick(a, 'Digest');
      const match = str(pick(a, 'Match'), 'Exact');
      return typeof digest === 'string' ? { Digest: digest, Match: match } : { Value: str(pick(a, 'Value')), Match: match };
    });
  }
  task.Check = check as unknown as Json;
  return check;
}

/** Another kind: `Answers` and `MaxAttempts` belong to `Answer` only (else 422). */
export function withKind(check: ECheck, kind: CheckKind): Json {
  if (kind !== 'Answer') return { Kind: kind };
  const answers = check.Answers?.length ? check.Answers : [{ Value: '', Match: 'Exact' }];
  return { Kind: kind, MaxAttempts: check.MaxAttempts ?? null, Answers: answers };
}

export function editableHints(task: ETask): EHint[] {
  const hints = (task.Hints ?? []).map((hint) => ({ Text: str(pick(hint, 'Text')), Cost: Number(pick(hint, 'Cost') ?? 0) }));
  task.Hints = hints as unknown as Json[];
  return hints;
}

export function emptyDoc(): EDoc {
  return { Title: '', Description: '', Color: null, Levels: [], Resources: [] };
}

function move<T>(items: T[], from: number, to: number): void {
  if (to < 0 || to >= items.length) return;
  const [item] = items.splice(from, 1);
  if (item !== undefined) items.splice(to, 0, item);
}

function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function renderDisciplineEditor(ctx: Ctx, id: string | null): void {
  let doc: EDoc = emptyDoc();
  let etag: string | null = null;
  let original: Discipline | null = null;
  const form = h('form', { id: 'discipline-editor', class: 'editor', novalidate: true, 'data-testid': 'discipline-editor', 'aria-label': 'Discipline editor' });
  const conflict = h('div', { id: 'editor-conflict', class: 'card warning', hidden: true, 'data-testid': 'editor-conflict' });
  const importInput = h('input', { id: 'editor-import-file', type: 'file', accept: 'application/json,.json', 'data-testid': 'editor-import-file' });

  replaceChildren(
    ctx.view,
    h('p', { class: 'crumbs' }, h('a', { href: '#/disciplines' }, 'Disciplines')),
    h('h1', { tabindex: -1, id: 'editor-heading' }, id ? 'Edit discipline' : 'New discipline'),
    h(
      'div',
      { class: 'card toolbar' },
      h('label', { for: 'editor-import-file' }, 'Import a discipline document (JSON)'),
      importInput,
      h('button', { type: 'button', id: 'editor-export', 'data-testid': 'editor-export', onclick: () => exportDoc() }, 'Export JSON'),
    ),
    conflict,
    form,
  );

  importInput.addEventListener('change', () => {
    const file = importInput.files?.[0];
    if (!file) return;
    void file.text().then((text) => {
      try {
        const parsed: unknown = JSON.parse(text);
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
        doc = toEditable(parsed as Json, id !== null);
        draw();
        ctx.notify(`Imported “${file.name}”: review it, then save.`);
      } catch {
        ctx.showError(new Error(`“${file.name}” is not a discipline document (a JSON object with Title, Description, Levels…).`));
      }
      importInput.value = '';
    });
  });

  function exportDoc(): void {
    const body = original && etag ? { Id: original.Id, ...doc } : doc;
    const name = (doc.Title || 'discipline').replace(/[^\w.-]+/g, '-').toLowerCase();
    download(`${name}.json`, JSON.stringify(body, null, 2) + '\n');
  }

  // --- Drawing ---------------------------------------------------------------
  let counter = 0;
  function field(path: string, label: string, value: string | number, set: (v: string) => void, opts: { type?: string; multiline?: boolean; size?: string } = {}): HTMLElement {
    const inputId = `ed-${++counter}`;
    const attrs = { id: inputId, name: path, 'data-path': path, autocomplete: 'off' };
    const input = opts.multiline
      ? h('textarea', { ...attrs, rows: 2 }, String(value))
      : h('input', { ...attrs, type: opts.type ?? 'text', value: String(value), ...(opts.type === 'number' ? { min: 0, step: 1, inputmode: 'numeric' } : {}) });
    input.addEventListener('input', () => set(input.value));
    return h('div', { class: `field ${opts.size ?? ''}` }, h('label', { for: inputId }, label), input);
  }

  function nodeButtons(label: string, items: unknown[], i: number, path: string): HTMLElement {
    return h(
      'div',
      { class: 'node-actions' },
      h('button', { type: 'button', class: 'small', 'data-action': 'up', disabled: i === 0, 'aria-label': `Move ${label} up`, onclick: () => restructure(() => move(items, i, i - 1), path.replace(/\[\d+\]$/, `[${i - 1}]`)) }, '↑'),
      h('button', { type: 'button', class: 'small', 'data-action': 'down', disabled: i === items.length - 1, 'aria-label': `Move ${label} down`, onclick: () => restructure(() => move(items, i, i + 1), path.replace(/\[\d+\]$/, `[${i + 1}]`)) }, '↓'),
      h('button', { type: 'button', class: 'small danger', 'data-action': 'remove', 'aria-label': `Remove ${label}`, onclick: () => restructure(() => items.splice(i, 1), null) }, 'Remove'),
    );
  }

  function resources(owner: { Resources: EResource[] }, path: string, ownerLabel: string): HTMLElement {
    return h(
      'div',
      { class: 'editor-resources', 'data-path': `${path}Resources` },
      owner.Resources.map((r, i) => {
        const p = `${path}Resources[${i}]`;
        const label = `resource ${i + 1} of ${ownerLabel}`;
        return h(
          'fieldset',
          { class: 'editor-node ed-resource', 'data-path': p, 'data-testid': 'editor-resource' },
          h('legend', null, `Resource ${i + 1}`),
          h(
            'div',
            { class: 'row' },
            field(`${p}.Title`, 'Title', r.Title, (v) => (r.Title = v)),
            field(`${p}.Url`, 'URL', r.Url, (v) => (r.Url = v), { type: 'url', size: 'wide' }),
            field(`${p}.Kind`, 'Kind', r.Kind, (v) => (r.Kind = v), { size: 'narrow' }),
          ),
          nodeButtons(label, owner.Resources, i, p),
        );
      }),
      h('button', { type: 'button', class: 'small', 'data-add': 'resource', onclick: () => restructure(() => owner.Resources.push({ Title: '', Description: '', Url: 'https://', Kind: 'Link' }), `${path}Resources[${owner.Resources.length}]`) }, `Add a resource to ${ownerLabel}`),
    );
  }

  function sequentialBox(): HTMLElement {
    const box = h('input', { type: 'checkbox', id: 'ed-sequential', name: 'Sequential', 'data-path': 'Sequential', checked: doc.Sequential === true, 'aria-describedby': 'ed-sequential-help' });
    box.addEventListener('change', () => (doc.Sequential = box.checked));
    return h(
      'div',
      { class: 'check' },
      box,
      h('label', { for: 'ed-sequential' }, 'Sequential'),
      h('p', { id: 'ed-sequential-help', class: 'muted small' }, 'A level opens for a team only once the team has completed every task of the previous level.'),
    );
  }

  /** A select bound to a string; `redraw` when the choice changes what is shown. */
  function choice(path: string, label: string, options: readonly (readonly [string, string])[], value: string, set: (v: string) => void, redraw = false): HTMLElement {
    const inputId = `ed-${++counter}`;
    const select = h('select', { id: inputId, name: path, 'data-path': path }, options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)));
    select.addEventListener('change', () => {
      set(select.value);
      if (redraw) {
        draw();
        form.querySelector<HTMLElement>(`[data-path="${CSS.escape(path)}"]`)?.focus();
      }
    });
    return h('div', { class: 'field' }, h('label', { for: inputId }, label), select);
  }

  function checkFields(task: ETask, tp: string, tl: string): HTMLElement {
    const check = editableCheck(task);
    const cp = `${tp}.Check`;
    const parts: HTMLElement[] = [
      choice(`${cp}.Kind`, 'Completed by', CHECK_KINDS, check.Kind, (v) => (task.Check = withKind(check, v as CheckKind)), true),
    ];
    if (check.Kind === 'Answer') {
      const answers = check.Answers ?? [];
      parts.push(
        field(`${cp}.MaxAttempts`, 'Attempts (empty: unlimited)', check.MaxAttempts ?? '', (v) => (check.MaxAttempts = v.trim() === '' ? null : Number(v)), { type: 'number', size: 'narrow' }),
        h(
          'ol',
          { class: 'editor-answers', 'aria-label': `Accepted answers of ${tl}` },
          answers.map((a, ai) => {
            const ap = `${cp}.Answers[${ai}]`;
            const stored = typeof a.Digest === 'string';
            return h(
              'li',
              { class: 'editor-node', 'data-path': ap, 'data-testid': 'editor-answer' },
              h(
                'div',
                { class: 'row' },
                stored
                  ? h('p', { class: 'muted small' }, `Answer ${ai + 1}: stored (${a.Match ?? 'Exact'}; kept as a digest, it cannot be shown)`)
                  : field(`${ap}.Value`, `Answer ${ai + 1}`, a.Value ?? '', (v) => (a.Value = v), { size: 'wide' }),
                stored ? null : choice(`${ap}.Match`, 'Match', MATCHES, a.Match ?? 'Exact', (v) => (a.Match = v)),
              ),
              h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove answer ${ai + 1} of ${tl}`, onclick: () => restructure(() => answers.splice(ai, 1), null) }, 'Remove answer'),
            );
          }),
        ),
        h('button', { type: 'button', class: 'small', 'data-add': 'answer', onclick: () => { answers.push({ Value: '', Match: 'Exact' }); check.Answers = answers; draw(); form.querySelector<HTMLElement>(`[data-path="${CSS.escape(`${cp}.Answers[${answers.length - 1}].Value`)}"]`)?.focus(); } }, `Add an answer to ${tl}`),
      );
    }
    return h('fieldset', { class: 'editor-check', 'data-path': cp, 'data-testid': 'editor-check' }, h('legend', null, 'How it is completed'), ...parts);
  }

  function hintFields(task: ETask, tp: string, tl: string): HTMLElement {
    const hints = editableHints(task);
    return h(
      'fieldset',
      { class: 'editor-hints', 'data-path': `${tp}.Hints`, 'data-testid': 'editor-hints' },
      h('legend', null, 'Hints'),
      hints.map((hint, hi) => {
        const hp = `${tp}.Hints[${hi}]`;
        return h(
          'div',
          { class: 'editor-node', 'data-path': hp, 'data-testid': 'editor-hint' },
          h(
            'div',
            { class: 'row' },
            field(`${hp}.Text`, `Hint ${hi + 1}`, hint.Text, (v) => (hint.Text = v), { size: 'wide' }),
            field(`${hp}.Cost`, 'Cost (points)', hint.Cost, (v) => (hint.Cost = v.trim() === '' ? 0 : Number(v)), { type: 'number', size: 'narrow' }),
          ),
          h('button', { type: 'button', class: 'small danger', 'aria-label': `Remove hint ${hi + 1} of ${tl}`, onclick: () => restructure(() => hints.splice(hi, 1), null) }, 'Remove hint'),
        );
      }),
      h('button', { type: 'button', class: 'small', 'data-add': 'hint', onclick: () => { hints.push({ Text: '', Cost: 0 }); draw(); form.querySelector<HTMLElement>(`[data-path="${CSS.escape(`${tp}.Hints[${hints.length - 1}].Text`)}"]`)?.focus(); } }, `Add a hint to ${tl}`),
    );
  }

  function draw(): void {
    counter = 0;
    const colorSelect = h(
      'select',
      { id: 'ed-color', name: 'Color', 'data-path': 'Color' },
      h('option', { value: '' }, 'None'),
      COLORS.map((c) => h('option', { value: c, selected: doc.Color === c }, c)),
    );
    colorSelect.addEventListener('change', () => (doc.Color = colorSelect.value || null));
    replaceChildren(
      form,
      h(
        'fieldset',
        { class: 'card', 'data-path': '' },
        h('legend', null, 'Discipline'),
        field('Title', 'Title', doc.Title, (v) => (doc.Title = v)),
        field('Description', 'Description', doc.Description, (v) => (doc.Description = v), { multiline: true }),
        h('div', { class: 'field' }, h('label', { for: 'ed-color' }, 'Color'), colorSelect),
        sequentialBox(),
        resources(doc, '', 'the discipline'),
      ),
      h(
        'ol',
        { class: 'editor-levels', id: 'editor-levels' },
        doc.Levels.map((level, li) => {
          const lp = `Levels[${li}]`;
          return h(
            'li',
            { class: 'editor-node ed-level card', 'data-path': lp, 'data-testid': 'editor-level' },
            h('h2', { class: 'h3' }, `Level ${li + 1}`),
            field(`${lp}.Title`, `Level ${li + 1} title`, level.Title, (v) => (level.Title = v)),
            field(`${lp}.Description`, 'Description', level.Description, (v) => (level.Description = v), { multiline: true }),
            nodeButtons(`level ${li + 1}`, doc.Levels, li, lp),
            resources(level, `${lp}.`, `level ${li + 1}`),
            h(
              'ol',
              { class: 'editor-quests' },
              level.Quests.map((quest, qi) => {
                const qp = `${lp}.Quests[${qi}]`;
                const ql = `quest ${qi + 1} of level ${li + 1}`;
                return h(
                  'li',
                  { class: 'editor-node ed-quest', 'data-path': qp, 'data-testid': 'editor-quest' },
                  h('h3', { class: 'h4' }, `Quest ${qi + 1}`),
                  field(`${qp}.Title`, `Quest ${qi + 1} title`, quest.Title, (v) => (quest.Title = v)),
                  field(`${qp}.Description`, 'Description', quest.Description, (v) => (quest.Description = v), { multiline: true }),
                  nodeButtons(ql, level.Quests, qi, qp),
                  resources(quest, `${qp}.`, ql),
                  h(
                    'ol',
                    { class: 'editor-tasks' },
                    quest.Tasks.map((task, ti) => {
                      const tp = `${qp}.Tasks[${ti}]`;
                      const tl = `task ${ti + 1} of ${ql}`;
                      return h(
                        'li',
                        { class: 'editor-node ed-task', 'data-path': tp, 'data-testid': 'editor-task' },
                        h(
                          'div',
                          { class: 'row' },
                          field(`${tp}.Title`, `Task ${ti + 1} title`, task.Title, (v) => (task.Title = v), { size: 'wide' }),
                          field(`${tp}.Points`, 'Points', task.Points, (v) => (task.Points = v.trim() === '' ? Number.NaN : Number(v)), { type: 'number', size: 'narrow' }),
                        ),
                        field(`${tp}.Description`, 'Description', task.Description, (v) => (task.Description = v), { multiline: true }),
                        checkFields(task, tp, tl),
                        hintFields(task, tp, tl),
                        nodeButtons(tl, quest.Tasks, ti, tp),
                        resources(task, `${tp}.`, tl),
                      );
                    }),
                  ),
                  h('button', { type: 'button', class: 'small', 'data-add': 'task', onclick: () => restructure(() => quest.Tasks.push({ Title: '', Description: '', Points: 10, Resources: [] }), `${qp}.Tasks[${quest.Tasks.length}]`) }, `Add a task to quest ${qi + 1}`),
                );
              }),
            ),
            h('button', { type: 'button', class: 'small', 'data-add': 'quest', onclick: () => restructure(() => level.Quests.push({ Title: '', Description: '', Tasks: [], Resources: [] }), `${lp}.Quests[${level.Quests.length}]`) }, `Add a quest to level ${li + 1}`),
          );
        }),
      ),
      h('button', { type: 'button', id: 'editor-add-level', 'data-add': 'level', onclick: () => restructure(() => doc.Levels.push({ Title: '', Description: '', Quests: [], Resources: [] }), `Levels[${doc.Levels.length}]`) }, 'Add a level'),
      h(
        'div',
        { class: 'card actions-row' },
        h('button', { type: 'submit', id: 'editor-save', class: 'primary', 'data-testid': 'editor-save' }, id ? 'Save changes' : 'Create discipline'),
        h('a', { href: id ? disciplineHref(id) : '#/disciplines', class: 'button-link' }, 'Cancel'),
      ),
    );
    form.dataset['loaded'] = 'true';
  }

  /** A change of structure: redraw, and put focus on the new or moved node's title. */
  function restructure(change: () => void, focusPath: string | null): void {
    change();
    draw();
    if (focusPath) form.querySelector<HTMLElement>(`[data-path="${CSS.escape(`${focusPath}.Title`)}"]`)?.focus();
    else form.querySelector<HTMLButtonElement>('#editor-add-level')?.focus();
  }

  // --- Field errors ------------------------------------------------------------
  function markErrors(errors: { field?: string; message?: string }[]): void {
    for (const el of form.querySelectorAll('.field-error')) el.remove();
    for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
    let first: HTMLElement | null = null;
    errors.forEach((e, n) => {
      let path = e.field ?? '';
      let target: HTMLElement | null = null;
      // The exact input, else the nearest node it belongs to.
      while (path && !target) {
        target = form.querySelector<HTMLElement>(`[data-path="${CSS.escape(path)}"]`);
        if (!target) path = path.replace(/(\.[^.[\]]+|\[\d+\])$/, '') === path ? '' : path.replace(/(\.[^.[\]]+|\[\d+\])$/, '');
      }
      target ??= form.querySelector<HTMLElement>('[data-path=""]');
      if (!target) return;
      const msgId = `ed-err-${n}`;
      const msg = h('p', { id: msgId, class: 'field-error', 'data-testid': 'field-error', 'data-field': e.field ?? '' }, e.message ?? 'Invalid.');
      if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) {
        target.setAttribute('aria-invalid', 'true');
        target.setAttribute('aria-describedby', msgId);
        target.insertAdjacentElement('afterend', msg);
        first ??= target;
      } else {
        target.insertBefore(msg, target.firstChild?.nextSibling ?? null);
        first ??= msg;
      }
    });
    (first as HTMLElement | null)?.focus?.();
  }

  function showConflict(kind: 'stale' | 'progress', message: string): void {
    conflict.hidden = false;
    if (kind === 'stale') {
      replaceChildren(
        conflict,
        h('p', { 'data-testid': 'editor-conflict-message' }, h('strong', null, 'Someone else saved this discipline after you opened it. '), 'Your changes are not saved, so that neither of you overwrites the other. Export your version to keep it, then reload to see theirs.'),
        h('button', { type: 'button', id: 'editor-reload', onclick: () => void load() }, 'Reload their version (discard mine)'),
      );
    } else {
      replaceChildren(
        conflict,
        h('p', { 'data-testid': 'editor-conflict-message' }, h('strong', null, 'Teams have completed tasks this change removes. '), message),
        h('button', { type: 'button', id: 'editor-save-force', class: 'danger', onclick: () => void save(true) }, 'Save and withdraw their progress'),
      );
    }
    conflict.querySelector<HTMLElement>('button')?.focus();
  }

  async function save(force = false): Promise<void> {
    ctx.clearMessages();
    conflict.hidden = true;
    await busy(form, async () => {
      try {
        const body = { ...doc, Levels: doc.Levels };
        if (id) {
          const res = await ctx.api.replaceDiscipline(id, body, etag, force);
          if (!ctx.isCurrent()) return;
          etag = res.etag;
          ctx.refreshDisciplines();
          navigateWithNotice(disciplineHref(id), `Discipline “${res.data.Title}” saved.`);
        } else {
          const res = await ctx.api.createDiscipline(body);
          if (!ctx.isCurrent()) return;
          ctx.refreshDisciplines();
          navigateWithNotice(disciplineHref(res.data.Id), `Discipline “${res.data.Title}” created.`);
        }
      } catch (err) {
        if (err instanceof ApiError && err.status === 422 && err.problem?.errors?.length) {
          handleError(ctx, err);
          markErrors(err.problem.errors);
        } else if (err instanceof ApiError && err.status === 412) {
          showConflict('stale', '');
          handleError(ctx, err);
        } else if (err instanceof ApiError && err.status === 409) {
          showConflict('progress', describeProblem(err.status, err.problem, err.message).summary);
        } else {
          handleError(ctx, err);
        }
      }
    });
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void save(false);
  });

  async function load(): Promise<void> {
    conflict.hidden = true;
    ctx.clearMessages();
    if (!id) {
      draw();
      return;
    }
    try {
      const res = await ctx.api.disciplineWithEtag(id);
      if (!ctx.isCurrent()) return;
      original = res.data;
      etag = res.etag;
      doc = toEditable(res.data as unknown as Json, true);
      document.title = `Edit ${res.data.Title} · Questline`;
      draw();
    } catch (err) {
      handleError(ctx, err);
    }
  }

  void load();
}

/** The delete control of a discipline: an explicit confirmation, and a second one
 * ("delete with its progress") when teams have progress in it. */
export function deleteDisciplineControl(ctx: Ctx, d: Discipline, etag: string | null): HTMLElement {
  const force = h('input', { type: 'checkbox', id: 'discipline-delete-force', 'data-testid': 'discipline-delete-force' });
  const confirm = h('button', { type: 'button', id: 'discipline-delete-confirm', class: 'danger', 'data-testid': 'discipline-delete-confirm' }, 'Delete discipline');
  const panel = h(
    'div',
    { id: 'discipline-delete-panel', class: 'card warning', hidden: true, role: 'group', 'aria-labelledby': 'discipline-delete-heading' },
    h('p', { id: 'discipline-delete-heading' }, h('strong', null, `Delete “${d.Title}” with all its levels, quests, tasks and resources?`)),
    h('div', { class: 'check' }, force, h('label', { for: 'discipline-delete-force' }, 'Delete with its progress: teams lose the points they earned in it')),
    h('div', { class: 'actions-row' }, confirm, h('button', { type: 'button', onclick: () => (panel.hidden = true) }, 'Cancel')),
  );
  const open = h('button', { type: 'button', id: 'discipline-delete', class: 'danger', 'data-testid': 'discipline-delete', onclick: () => { panel.hidden = false; confirm.focus(); } }, 'Delete…');
  confirm.addEventListener('click', () => {
    void busy(confirm, async () => {
      try {
        await ctx.api.deleteDiscipline(d.Id, etag, force.checked);
        if (!ctx.isCurrent()) return;
        ctx.refreshDisciplines();
        navigateWithNotice('#/disciplines', `Discipline “${d.Title}” deleted.`);
      } catch (err) {
        if (err instanceof ApiError && err.status === 409) {
          ctx.showError(new Error(`${describeProblem(err.status, err.problem, err.message).summary} To delete it anyway, tick “Delete with its progress”.`));
          force.focus();
        } else if (err instanceof ApiError && err.status === 412) {
          ctx.showError(new Error('Someone changed this discipline since you opened it: reload the page before deleting it.'));
        } else handleError(ctx, err);
      }
    });
  });
  return h('div', { class: 'delete-control' }, open, panel);
}

// What every view gets: the API client, the caller's role, and the shared
// message areas (#error for failures, #notice for confirmations).

import { Api, ApiError } from './api';
import { h, replaceChildren } from './dom';
import { describeProblem } from './format';
import type { DisciplineSummary, SessionInfo } from './types';

export interface Ctx {
  api: Api;
  admin: boolean;
  session: SessionInfo;
  view: HTMLElement;
  /** False once the user has navigated away: late responses are dropped. */
  isCurrent(): boolean;
  onCleanup(fn: () => void): void;
  showError(err: unknown, form?: HTMLFormElement): void;
  notify(message: string): void;
  clearMessages(): void;
  disciplines(): Promise<DisciplineSummary[]>;
  /** Forget the cached discipline list (after a create, change or delete). */
  refreshDisciplines(): void;
  /** Called when the API said 401: the session is over and sign-in is shown. */
  signedOut(message: string): void;
}

const errorEl = (): HTMLElement => document.getElementById('error') as HTMLElement;
const noticeEl = (): HTMLElement => document.getElementById('notice') as HTMLElement;

let flashed: string | null = null;

/** Go to `hash` and show `message` on the page that opens there. */
export function navigateWithNotice(hash: string, message: string): void {
  flashed = message;
  if (window.location.hash === hash) {
    notify(message);
    flashed = null;
  } else window.location.hash = hash;
}

/** The notice a navigation carried, once. */
export function takeFlash(): string | null {
  const message = flashed;
  flashed = null;
  return message;
}

export function clearMessages(): void {
  const err = errorEl();
  err.hidden = true;
  replaceChildren(err);
  replaceChildren(noticeEl());
  for (const el of document.querySelectorAll('[aria-invalid="true"]')) el.removeAttribute('aria-invalid');
}

export function notify(message: string): void {
  const err = errorEl();
  err.hidden = true;
  replaceChildren(err);
  replaceChildren(noticeEl(), message);
}

/** Marks the input a field error names (`name`, `body.name`, `givenName`…) as invalid. */
function markField(form: HTMLFormElement, field: string): void {
  const key = field.split(/[.[\]]/).filter(Boolean).pop()?.toLowerCase();
  if (!key) return;
  for (const el of Array.from(form.elements)) {
    if (el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement) {
      if (el.name.toLowerCase() === key) el.setAttribute('aria-invalid', 'true');
    }
  }
}

export function showError(err: unknown, form?: HTMLFormElement): void {
  const el = errorEl();
  replaceChildren(noticeEl());
  let summary: string;
  let fields: { field: string; message: string }[] = [];
  let requestId: string | null = null;
  let status = 0;
  if (err instanceof ApiError) {
    const m = describeProblem(err.status, err.problem, err.message, err.retryAfter);
    summary = m.summary;
    fields = m.fields;
    requestId = m.requestId;
    status = err.status;
  } else {
    summary = err instanceof Error ? err.message : String(err);
  }
  replaceChildren(
    el,
    h('p', { class: 'error-summary', 'data-testid': 'error-summary', 'data-status': status || null }, summary),
    fields.length
      ? h(
          'ul',
          { class: 'error-fields', 'data-testid': 'error-fields' },
          fields.map((f) => h('li', { 'data-field': f.field }, f.field ? h('strong', null, `${f.field}: `) : null, f.message)),
        )
      : null,
    requestId ? h('p', { class: 'muted small' }, `Request id: ${requestId}`) : null,
  );
  el.hidden = false;
  if (form) for (const f of fields) markField(form, f.field);
}

export function createDisciplineCache(api: Api): () => Promise<DisciplineSummary[]> {
  let cached: Promise<DisciplineSummary[]> | null = null;
  return () => {
    if (!cached) {
      cached = api.disciplines();
      cached.catch(() => {
        cached = null;
      });
    }
    return cached;
  };
}

/** Fills a discipline filter <select> ("All disciplines" first). */
export async function fillDisciplineSelect(ctx: Ctx, select: HTMLSelectElement, selected: string | null): Promise<void> {
  try {
    const list = await ctx.disciplines();
    if (!ctx.isCurrent()) return;
    replaceChildren(
      select,
      h('option', { value: '' }, 'All disciplines'),
      list.map((d) => h('option', { value: d.Id, selected: d.Id === selected }, d.Title)),
    );
  } catch (err) {
    handleError(ctx, err);
  }
}

/** Shows an error; a 401 signs the user out instead. */
export function handleError(ctx: Ctx, err: unknown, form?: HTMLFormElement): void {
  if (!ctx.isCurrent()) return;
  if (err instanceof ApiError && err.status === 401) {
    const m = describeProblem(err.status, err.problem, err.message);
    ctx.signedOut(`You are signed out (${m.summary.replace(/\.$/, '')}). Sign in again.`);
    return;
  }
  ctx.showError(err, form);
}

/** Runs a form action with its submit button disabled (no double submits). */
export async function busy<T>(form: HTMLFormElement | HTMLButtonElement, action: () => Promise<T>): Promise<T> {
  const buttons = form instanceof HTMLFormElement ? Array.from(form.querySelectorAll('button')) : [form];
  const focused = document.activeElement;
  for (const b of buttons) b.disabled = true;
  form.setAttribute('aria-busy', 'true');
  try {
    return await action();
  } finally {
    for (const b of buttons) b.disabled = false;
    form.removeAttribute('aria-busy');
    // Disabling the focused button drops focus to <body>; give it back.
    const lost = !document.activeElement || document.activeElement === document.body;
    if (lost && focused instanceof HTMLElement && focused.isConnected) focused.focus();
  }
}

/**
 * A "Download CSV" button: fetches `path` with `Accept: text/csv` (query from `query()`
 * at click time) and saves it under the name the server's `Content-Disposition` gives.
 */
export function csvButton(ctx: Ctx, id: string, label: string, path: string, query: () => Record<string, string | number | null>): HTMLButtonElement {
  const button = h('button', { type: 'button', id, class: 'secondary', 'data-testid': id }, label);
  button.addEventListener('click', () => {
    void busy(button, async () => {
      try {
        const { blob, filename } = await ctx.api.csv(path, query());
        const url = URL.createObjectURL(blob);
        const a = h('a', { href: url, download: filename, hidden: true });
        document.body.appendChild(a);
        a.click();
        a.remove();
        // Give the browser a moment to start the download before the URL goes.
        window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
      } catch (err) {
        handleError(ctx, err);
      }
    });
  });
  return button;
}

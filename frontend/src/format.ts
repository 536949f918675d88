// Pure formatting helpers (unit-tested in format.test.ts).

import type { Problem } from './types';

export interface ErrorMessage {
  /** One line a person can read, e.g. "Conflict: a team named Owls already exists." */
  summary: string;
  /** Field-level messages, "name: must not be empty". */
  fields: { field: string; message: string }[];
  requestId: string | null;
}

const STATUS_HINTS: Record<number, string> = {
  0: 'Cannot reach the service',
  401: 'Not signed in, or the token was rejected',
  403: 'This needs an admin token',
  404: 'Not found',
  409: 'Conflict',
  413: 'Too large',
  422: 'Invalid input',
  429: 'Too many requests',
  500: 'Server error',
};

/** A readable message for a failed call, from its RFC 9457 problem document. */
export function describeProblem(status: number, problem: Problem | null, fallback: string, retryAfter: string | null = null): ErrorMessage {
  const title = problem?.title?.trim() || STATUS_HINTS[status] || fallback;
  const detail = problem?.detail?.trim();
  let summary = detail && detail !== title ? `${title}: ${detail}` : title;
  if (!/[.!?]$/.test(summary)) summary += '.';
  if (status === 429 && retryAfter) summary += ` Try again in ${retryAfter} s.`;
  const fields = (problem?.errors ?? [])
    .filter((e) => e && (e.message || e.field))
    .map((e) => ({ field: String(e.field ?? ''), message: String(e.message ?? 'is invalid') }));
  return { summary, fields, requestId: problem?.requestId ?? null };
}

/** Only http(s) URLs become links; anything else (javascript:, data:) does not. */
export function safeHttpUrl(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
  } catch {
    return null;
  }
}

const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

export function formatNumber(n: number | null | undefined): string {
  return typeof n === 'number' && Number.isFinite(n) ? numberFormat.format(n) : '–';
}

export function formatPercent(p: number | null | undefined): string {
  return typeof p === 'number' && Number.isFinite(p) ? `${Math.round(p)}%` : '–';
}

export function formatDateTime(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '–';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** Tags typed as "a, b; c" → ["a", "b", "c"] (trimmed, empties dropped). */
export function parseTags(input: string): string[] {
  return input
    .split(/[,;]/)
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}

/** `<input type="datetime-local">` value (local time) → RFC 3339 UTC, or null. */
export function localInputToIso(value: string): string | null {
  if (!value) return null;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return null;
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface StepPoint {
  x: number;
  y: number;
}

/**
 * API series points → chart points in epoch ms, sorted, extended flat to `endMs`
 * so every team's line reaches the right edge of the window.
 */
export function toStepPoints(points: { At: string; Score: number }[], endMs: number | null): StepPoint[] {
  const out = points
    .map((p) => ({ x: Date.parse(p.At), y: Number(p.Score) }))
    .filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y))
    .sort((a, b) => a.x - b.x);
  const last = out[out.length - 1];
  if (last && endMs !== null && endMs > last.x) out.push({ x: endMs, y: last.y });
  return out;
}

/** The canonical discipline colours (Purple | Green | Red) → a CSS class suffix. */
export function colorClass(color: string | null | undefined): string {
  const c = (color ?? '').toLowerCase();
  return c === 'purple' || c === 'green' || c === 'red' ? c : 'none';
}


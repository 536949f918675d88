import { describe, expect, it } from 'vitest';
import { apiBase, nextLink, randomUuid, stripOrigin } from './api';
import { credentialFromHash, credentialFromInput } from './auth';
import { colorClass, describeProblem, localInputToIso, parseTags, safeHttpUrl, toStepPoints } from './format';
import { parseRoute } from './router';

describe('auth', () => {
  it('takes a code or a token from the fragment only', () => {
    expect(credentialFromHash('#code=abcDEF123_-xyz')).toEqual({ Code: 'abcDEF123_-xyz' });
    expect(credentialFromHash('#token=abc.def.ghi&x=1')).toEqual({ IdToken: 'abc.def.ghi' });
    expect(credentialFromHash('#/leaderboard')).toBeNull();
    expect(credentialFromHash('#code=')).toBeNull();
  });
  it('reads what is pasted: a link, a code or a token', () => {
    expect(credentialFromInput(' http://h/ui/#code=abcdefghijklmnop ')).toEqual({ Code: 'abcdefghijklmnop' });
    expect(credentialFromInput('Bearer abc.def.ghi\n')).toEqual({ IdToken: 'abc.def.ghi' });
    expect(credentialFromInput('abcdefghijklmnopqrstu')).toEqual({ Code: 'abcdefghijklmnopqrstu' });
    expect(credentialFromInput('short')).toBeNull();
    expect(credentialFromInput('')).toBeNull();
  });
});

describe('api', () => {
  it('follows Link headers below the base', () => {
    expect(nextLink('<http://h/q/team?limit=2&after=x>; rel="next"')).toBe('http://h/q/team?limit=2&after=x');
    expect(nextLink(null)).toBeNull();
    expect(stripOrigin('http://h/q/team?limit=2&after=x', '/q')).toBe('/team?limit=2&after=x');
  });
});

describe('format', () => {
  it('describes problems readably', () => {
    const m = describeProblem(422, {
      title: 'Validation failed',
      detail: 'The request body is invalid',
      errors: [{ field: 'name', message: 'must not be empty' }],
      requestId: 'r1',
    }, '422');
    expect(m.summary).toBe('Validation failed: The request body is invalid.');
    expect(m.fields).toEqual([{ field: 'name', message: 'must not be empty' }]);
    expect(m.requestId).toBe('r1');
    expect(describeProblem(502, null, '502 Bad Gateway').summary).toBe('502 Bad Gateway.');
    expect(describeProblem(429, null, 'x', '3').summary).toBe('Too many requests. Try again in 3 s.');
  });
  it('links only http(s)', () => {
    expect(safeHttpUrl('https://example.org/a')).toBe('https://example.org/a');
    expect(safeHttpUrl('javascript:alert(1)')).toBeNull();
    expect(safeHttpUrl('nope')).toBeNull();
  });
  it('parses tags', () => {
    expect(parseTags(' a, b ;; c,')).toEqual(['a', 'b', 'c']);
  });
  it('converts local input to UTC', () => {
    expect(localInputToIso('')).toBeNull();
    expect(localInputToIso('2026-11-22T10:00')).toMatch(/^2026-11-2\dT\d\d:[0-5][05]:00Z$/); // zones with :30 and :45 offsets too
  });
  it('builds step points extended to the window end', () => {
    const pts = toStepPoints([
      { At: '2026-11-22T10:05:00Z', Score: 10 },
      { At: '2026-11-22T10:00:00Z', Score: 0 },
    ], Date.parse('2026-11-22T11:00:00Z'));
    expect(pts.map((p) => p.y)).toEqual([0, 10, 10]);
    expect(pts[2]?.x).toBe(Date.parse('2026-11-22T11:00:00Z'));
  });
  it('maps colours', () => {
    expect(colorClass('Purple')).toBe('purple');
    expect(colorClass(null)).toBe('none');
  });
});

describe('api and router', () => {
  it('finds the API base from the page path', () => {
    expect(apiBase('/ui/')).toBe('');
    expect(apiBase('/questline/ui/')).toBe('/questline');
    expect(apiBase('/')).toBe('');
  });
  it('makes v4 UUIDs', () => {
    expect(randomUuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
  it('parses hash routes', () => {
    expect(parseRoute('')).toEqual({ name: 'leaderboard', id: null });
    expect(parseRoute('#/team/abc')).toEqual({ name: 'team', id: 'abc' });
    expect(parseRoute('#/discipline/x%2Fy')).toEqual({ name: 'discipline', id: 'x/y' });
    expect(parseRoute('#/graph')).toEqual({ name: 'graph', id: null });
    expect(parseRoute('#/nowhere')).toEqual({ name: 'notfound', id: null });
  });
});


import { describe, expect, it } from 'vitest';
import { filenameOf } from './api';

describe('filenameOf', () => {
  it('takes the quoted file name', () => {
    expect(filenameOf('attachment; filename="leaderboard.csv"', 'x.csv')).toBe('leaderboard.csv');
  });
  it('prefers filename* (RFC 5987) and decodes it', () => {
    expect(filenameOf(`attachment; filename="a.csv"; filename*=UTF-8''%C3%A9quipes.csv`, 'x.csv')).toBe('équipes.csv');
  });
  it('takes an unquoted file name', () => {
    expect(filenameOf('attachment; filename=teams.csv', 'x.csv')).toBe('teams.csv');
  });
  it('keeps only the base name of a path', () => {
    expect(filenameOf('attachment; filename="../../etc/passwd"', 'x.csv')).toBe('passwd');
  });
  it('falls back without a header or a name', () => {
    expect(filenameOf(null, 'x.csv')).toBe('x.csv');
    expect(filenameOf('attachment', 'x.csv')).toBe('x.csv');
    expect(filenameOf('attachment; filename=".."', 'x.csv')).toBe('x.csv');
  });
});

import { describe, expect, it } from 'vitest';
import { seasonBody } from './views/seasons';

describe('season form', () => {
  it('sends the times as UTC instants and leaves out what is empty', () => {
    const body = seasonBody({ name: '  Cup ', starts: '2026-01-01T10:00', freezes: '', ends: '2026-02-01T10:00', discipline: '' });
    expect(body['Name']).toBe('Cup');
    expect(body['StartsAt']).toBe(new Date('2026-01-01T10:00').toISOString().replace('.000Z', 'Z'));
    expect(body['EndsAt']).toBe(new Date('2026-02-01T10:00').toISOString().replace('.000Z', 'Z'));
    expect('FreezesAt' in body).toBe(false);
    expect('DisciplineId' in body).toBe(false);
  });
  it('names the discipline and the freeze when given', () => {
    const body = seasonBody({ name: 'Cup', starts: '2026-01-01T10:00', freezes: '2026-01-20T10:00', ends: '2026-02-01T10:00', discipline: 'd1' });
    expect(body['FreezesAt']).toBe(new Date('2026-01-20T10:00').toISOString().replace('.000Z', 'Z'));
    expect(body['DisciplineId']).toBe('d1');
  });
});

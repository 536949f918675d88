import { describe, expect, it } from 'vitest';
import { bracketsOf, seasonLabel } from './views/competition';

describe('competition switches', () => {
  it('offers each tag once, ignoring case, sorted', () => {
    const teams = [{ Tags: ['Juniors', 'x'] }, { Tags: ['juniors', 'Seniors'] }, { Tags: [] }];
    expect(bracketsOf(teams)).toEqual(['Juniors', 'Seniors', 'x']);
  });
  it('names a season with its phase unless it is running', () => {
    expect(seasonLabel({ Id: 'a', Name: 'Cup', Phase: 'Running' })).toBe('Cup');
    expect(seasonLabel({ Id: 'a', Name: 'Cup', Phase: 'Frozen' })).toBe('Cup (frozen)');
  });
});

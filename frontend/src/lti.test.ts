import { describe, expect, it } from 'vitest';
import { disciplineFromHash } from './views/lti';

describe('disciplineFromHash', () => {
  it('reads the discipline a launch names', () => {
    const id = '0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a21';
    expect(disciplineFromHash(`#/leaderboard?discipline=${id}`)).toBe(id);
  });

  it('ignores anything that is not a discipline id', () => {
    expect(disciplineFromHash('#/leaderboard')).toBeNull();
    expect(disciplineFromHash('#/leaderboard?discipline=<script>')).toBeNull();
    expect(disciplineFromHash('#/leaderboard?other=1')).toBeNull();
  });
});

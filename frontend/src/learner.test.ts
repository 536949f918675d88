import { describe, expect, it } from 'vitest';
import { attemptsByTask, attemptsLeft, landingRoute, latestSubmissions, openLevels } from './learner';

describe('openLevels', () => {
  const levels = [
    { TasksCompleted: 2, TasksTotal: 2 },
    { TasksCompleted: 1, TasksTotal: 3 },
    { TasksCompleted: 0, TasksTotal: 0 },
    { TasksCompleted: 0, TasksTotal: 1 },
  ];
  it('opens every level of a discipline that is not sequential', () => {
    expect(openLevels(levels, false)).toEqual([true, true, true, true]);
  });
  it('opens a level once the previous one is complete; an empty level counts as complete', () => {
    expect(openLevels(levels, true)).toEqual([true, true, false, true]);
  });
});

describe('attempts', () => {
  it('counts attempts per task and never goes below zero', () => {
    const used = attemptsByTask([{ TaskId: 'a' }, { TaskId: 'b' }, { TaskId: 'a' }]);
    expect(used.get('a')).toBe(2);
    expect(attemptsLeft(3, used.get('a') ?? 0)).toBe(1);
    expect(attemptsLeft(1, 2)).toBe(0);
    expect(attemptsLeft(null, 9)).toBeNull();
  });
});

describe('latestSubmissions', () => {
  it('keeps the latest submission of each task', () => {
    const latest = latestSubmissions([
      { TaskId: 't', State: 'Rejected' as const, SubmittedAt: '2026-01-01T10:00:00Z' },
      { TaskId: 't', State: 'Pending' as const, SubmittedAt: '2026-01-01T11:00:00Z' },
      { TaskId: 'u', State: 'Approved' as const, SubmittedAt: '2026-01-01T09:00:00Z' },
    ]);
    expect(latest.get('t')?.State).toBe('Pending');
    expect(latest.get('u')?.State).toBe('Approved');
  });
});

describe('landingRoute', () => {
  it('lands members of a team on My team, everyone else on the leaderboard', () => {
    expect(landingRoute('member', ['team'])).toBe('#/myteam');
    expect(landingRoute('member', [])).toBe('#/leaderboard');
    expect(landingRoute('admin', ['team'])).toBe('#/leaderboard');
  });
});

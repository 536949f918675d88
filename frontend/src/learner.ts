// Pure logic of the learner's page (My team): which levels are open, how many attempts
// are left, which submission of a task counts. The service decides every action; these
// only say what the page offers, so that it offers nothing the service would refuse.

export interface LevelCounts {
  TasksCompleted: number;
  TasksTotal: number;
}

/**
 * Whether each level is open, in order: every level of a discipline that is not
 * sequential; else the first, and each whose previous level the team completed (an
 * empty level counts as completed) — the service's rule (learners/locks.py).
 */
export function openLevels(levels: readonly LevelCounts[], sequential: boolean): boolean[] {
  return levels.map((_, i) => {
    if (!sequential || i === 0) return true;
    const previous = levels[i - 1] as LevelCounts;
    return previous.TasksCompleted >= previous.TasksTotal;
  });
}

/** Attempts left at a task: null when unlimited, never below zero. */
export function attemptsLeft(maxAttempts: number | null | undefined, used: number): number | null {
  if (maxAttempts === null || maxAttempts === undefined) return null;
  return Math.max(0, maxAttempts - used);
}

/** How many attempts each task has used (every counted attempt, right or wrong). */
export function attemptsByTask(attempts: readonly { TaskId: string }[]): Map<string, number> {
  const used = new Map<string, number>();
  for (const a of attempts) used.set(a.TaskId, (used.get(a.TaskId) ?? 0) + 1);
  return used;
}

export interface SubmissionLike {
  TaskId: string;
  State: 'Pending' | 'Approved' | 'Rejected';
  SubmittedAt: string;
}

/** Each task's latest submission (the list comes oldest first; the latest decides). */
export function latestSubmissions<S extends SubmissionLike>(list: readonly S[]): Map<string, S> {
  const latest = new Map<string, S>();
  for (const s of list) {
    const seen = latest.get(s.TaskId);
    if (!seen || seen.SubmittedAt <= s.SubmittedAt) latest.set(s.TaskId, s);
  }
  return latest;
}

/** What a learner's session lands on: My team when its e-mail names a team's member. */
export function landingRoute(role: string, teamIds: readonly string[] | null | undefined): string {
  return role !== 'admin' && teamIds && teamIds.length > 0 ? '#/myteam' : '#/leaderboard';
}

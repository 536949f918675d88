// What the sections of the team page share: the team's identity and version, the
// organization's tasks (for titles), and how each section reloads the others.

import { ApiError } from '../../api';
import type { Ctx } from '../../context';
import type { Discipline, Task, TeamStatus } from '../../types';

/** A task with the path of titles that leads to it (discipline › level › quest). */
export type TaskWithPath = Task & { path: string };

/** The loads of the page's sections; a change reloads what it affects. */
export interface Reloads {
  overview(): Promise<void>;
  graph(): Promise<void>;
  members(): Promise<void>;
  completions(): Promise<void>;
  /** The team itself (admin: its ETag and the name/tags form; `force` overwrites edits). */
  team(force?: boolean): Promise<void>;
}

export interface TeamPage {
  readonly ctx: Ctx;
  readonly teamId: string;
  /** The team's name as last loaded, for messages. */
  name: string;
  /** The ETag of `GET /team/{id}`, sent as `If-Match` with every change (admin). */
  etag: string | null;
  status: TeamStatus;
  /** Every task of the organization's disciplines, filled by `trees`. */
  readonly tasks: Map<string, TaskWithPath>;
  /** The organization's disciplines, each in full (levels, quests, tasks). */
  readonly trees: Promise<Discipline[]>;
  readonly reload: Reloads;
}

/** Levels or quests or tasks in their order. */
export function byOrder<T extends { Order: number }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => a.Order - b.Order);
}

/** Load every discipline in full and index its tasks into `tasks`. */
export async function loadTrees(ctx: Ctx, tasks: Map<string, TaskWithPath>): Promise<Discipline[]> {
  const summaries = await ctx.disciplines();
  const found = await Promise.all(summaries.map((d) => ctx.api.discipline(d.Id)));
  for (const d of found) {
    for (const level of byOrder(d.Levels)) {
      for (const quest of byOrder(level.Quests)) {
        for (const t of quest.Tasks) tasks.set(t.Id, { ...t, path: `${d.Title} › ${level.Title} › ${quest.Title}` });
      }
    }
  }
  return found;
}

/**
 * A 412 on a change: someone else changed the team since it was loaded. Says so,
 * reloads the team (overwriting the form) and its overview; true when it was one.
 */
export function staleMessage(page: TeamPage, err: unknown): boolean {
  if (err instanceof ApiError && err.status === 412) {
    page.ctx.showError(new Error('Someone else changed this team since this page loaded; nothing was changed. The page now shows their version: check it and try again.'));
    void page.reload.team(true);
    void page.reload.overview();
    return true;
  }
  return false;
}

// The team page (`#/team/<id>`), one module per section: the head (summary.ts),
// the admin actions (admin.ts, manage.ts, admin-forms.ts; admins only), progress,
// neighbours, completed tasks, the score graph and the members. This module lays them
// out, keeps what they share (page.ts) and starts their loads.

import { handleError, type Ctx } from '../../context';
import { h, replaceChildren } from '../../dom';
import type { Overview } from '../../types';
import { adjustmentsSection } from './adjustments';
import { adminSection } from './admin';
import { completionsSection } from './completions-table';
import { membersSection } from './members-table';
import { neighboursSection } from './neighbours';
import { loadTrees, type TaskWithPath, type TeamPage } from './page';
import { progressSection } from './progress';
import { scoreGraphSection } from './score-graph';
import { summary } from './summary';

export function renderTeam(ctx: Ctx, teamId: string): void {
  const tasks = new Map<string, TaskWithPath>();
  const page: TeamPage = {
    ctx,
    teamId,
    name: 'Team',
    etag: null,
    status: 'Active',
    tasks,
    trees: loadTrees(ctx, tasks),
    reload: {
      overview: loadOverview,
      graph: () => graph.load(),
      members: () => members.load(),
      completions: () => completions.load(),
      team: loadTeam,
    },
  };

  const head = summary();
  const progress = progressSection();
  const graph = scoreGraphSection(page);
  const members = membersSection(page);
  const completions = completionsSection(page);
  const admin = ctx.admin ? adminSection(page) : null;
  const neighbours = neighboursSection(page);
  const adjustments = adjustmentsSection(page);

  replaceChildren(ctx.view,
    h('p', { class: 'crumbs' }, h('a', { href: '#/teams' }, 'Teams')),
    head.heading,
    head.badges,
    head.stats,
    admin?.section ?? null,
    progress.section,
    neighbours.section,
    completions.section,
    adjustments.section,
    graph.section,
    members.section,
  );

  function showOverview(o: Overview): void {
    page.name = o.Name;
    head.show(o);
    progress.show(o);
    admin?.setAdminFlag(o.IsAdminTeam);
    admin?.setSurvey(o.IsSurveyCompleted);
    page.status = o.Status;
    admin?.setStatus(o.Status);
  }

  async function loadOverview(): Promise<void> {
    try {
      const o = await ctx.api.overview(teamId);
      if (!ctx.isCurrent()) return;
      showOverview(o);
      await neighbours.load(o);
    } catch (err) {
      handleError(ctx, err);
    }
  }

  async function loadTeam(force = false): Promise<void> {
    try {
      const res = await ctx.api.team(teamId);
      if (!ctx.isCurrent()) return;
      page.etag = res.etag;
      admin?.setTeam(res.data.Name, res.data.Tags ?? [], force);
    } catch (err) {
      handleError(ctx, err);
    }
  }

  void loadOverview();
  void graph.load();
  void members.load();
  void completions.load();
  void adjustments.load();
  if (ctx.admin) void loadTeam();
}

// "Score over time": the team's cumulative score on a time axis.

import { createGraph } from '../../chart';
import { handleError } from '../../context';
import { h } from '../../dom';
import type { TeamPage } from './page';

export interface ScoreGraphSection {
  section: HTMLElement;
  load(): Promise<void>;
}

export function scoreGraphSection(page: TeamPage): ScoreGraphSection {
  const { ctx, teamId } = page;
  const graph = createGraph({
    label: 'Cumulative score of this team over time',
    containerId: 'team-graph-chart',
    canvasId: 'team-graph-canvas',
    legendId: 'team-graph-legend',
  });
  ctx.onCleanup(() => graph.destroy());

  async function loadGraph(): Promise<void> {
    try {
      const s = await ctx.api.teamGraph(teamId);
      if (!ctx.isCurrent()) return;
      graph.update([s], Date.now());
      graph.container.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  }

  return {
    section: h('section', { 'aria-labelledby': 'team-graph-heading' }, h('h2', { id: 'team-graph-heading' }, 'Score over time'), graph.container),
    load: loadGraph,
  };
}

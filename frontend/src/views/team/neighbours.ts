// "Your neighbours": the ranks around the team on the leaderboard.

import { ApiError } from '../../api';
import { handleError } from '../../context';
import { h } from '../../dom';
import { formatNumber } from '../../format';
import { teamHref } from '../../router';
import type { Overview } from '../../types';
import type { TeamPage } from './page';

const NEIGHBOURS = 5;

export interface NeighboursSection {
  section: HTMLElement;
  load(o: Overview): Promise<void>;
}

export function neighboursSection(page: TeamPage): NeighboursSection {
  const { ctx, teamId } = page;
  const neighbours = h('div', { id: 'neighbours', 'data-testid': 'neighbours', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));

  /**
   * The ranks around this team (`?around`). An unranked team (admin or archived: its
   * overview has no rank) is not asked about; a 422 (it just became unranked) says the same.
   */
  async function load(o: Overview): Promise<void> {
    const unranked = (): void => {
      const why = o.IsAdminTeam ? 'it is an admin team' : o.Status !== 'Active' ? 'it is archived' : 'it is not active';
      neighbours.replaceChildren(
        h('p', { class: 'muted', 'data-testid': 'neighbours-unranked' }, `This team is not ranked: ${why}, and admin and archived teams are left out of the leaderboard.`),
      );
      neighbours.dataset['loaded'] = 'true';
    };
    if (o.Rank === null) {
      unranked();
      return;
    }
    try {
      const res = await ctx.api.leaderboardAround(teamId, NEIGHBOURS);
      if (!ctx.isCurrent()) return;
      neighbours.replaceChildren(
        h(
          'ol',
          { class: 'neighbours', id: 'neighbours-list', 'data-testid': 'neighbours-list' },
          res.data.map((e) => {
            const self = e.TeamId === teamId;
            return h(
              'li',
              { 'data-testid': 'neighbour', 'data-team-id': e.TeamId, 'data-rank': e.Rank, class: self ? 'mine' : null, 'aria-current': self ? 'true' : null },
              h('span', { class: 'rank' }, `#${e.Rank}`),
              ' ',
              self ? h('strong', null, e.Name) : h('a', { href: teamHref(e.TeamId) }, e.Name),
              ' · ',
              h('span', { class: 'num' }, `${formatNumber(e.Score)} points`),
            );
          }),
        ),
      );
    } catch (err) {
      if (!ctx.isCurrent()) return;
      if (err instanceof ApiError && err.status === 422) unranked();
      else {
        neighbours.replaceChildren(h('p', { class: 'muted' }, 'The neighbours could not be loaded.'));
        handleError(ctx, err);
      }
    } finally {
      if (ctx.isCurrent()) neighbours.dataset['loaded'] = 'true';
    }
  }

  return {
    section: h(
      'section',
      { 'aria-labelledby': 'neighbours-heading', id: 'team-neighbours', 'data-testid': 'team-neighbours' },
      h('h2', { id: 'neighbours-heading' }, 'Your neighbours'),
      neighbours,
    ),
    load,
  };
}

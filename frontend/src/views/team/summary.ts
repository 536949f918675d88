// The head of the team page: its name, badges and figures, from the overview.

import { h } from '../../dom';
import { formatDateTime, formatNumber } from '../../format';
import type { Overview } from '../../types';

function stat(label: string, value: string, testId: string): HTMLElement {
  return h('div', { class: 'stat' }, h('dt', null, label), h('dd', { 'data-testid': testId }, value));
}

export interface Summary {
  heading: HTMLElement;
  badges: HTMLElement;
  stats: HTMLElement;
  show(o: Overview): void;
}

export function summary(): Summary {
  const heading = h('h1', { tabindex: -1, id: 'team-name', 'data-testid': 'team-name' }, 'Team');
  const badges = h('p', { class: 'badges' });
  const stats = h('dl', { class: 'stats', id: 'team-stats', 'data-testid': 'team-stats' });
  return {
    heading,
    badges,
    stats,
    show(o: Overview): void {
      heading.textContent = o.Name;
      document.title = `${o.Name} · Questline`;
      badges.replaceChildren(
        ...[
          o.IsAdminTeam ? h('span', { class: 'badge admin', 'data-testid': 'team-admin-badge' }, 'Admin team') : null,
          o.Status !== 'Active' ? h('span', { class: 'badge' }, o.Status) : null,
        ].filter((x): x is HTMLSpanElement => x !== null),
      );
      const rank = o.Rank === null ? (o.IsAdminTeam ? 'Not ranked (admin team)' : 'Not ranked') : `#${o.Rank}`;
      stats.replaceChildren(
        stat('Score', formatNumber(o.Score), 'team-score'),
        stat('Rank', rank, 'team-rank'),
        stat('Survey', o.IsSurveyCompleted ? 'Completed' : 'Not completed', 'team-survey'),
        stat('Tasks completed', formatNumber(o.TasksCompleted), 'team-tasks-completed'),
        stat('Members', formatNumber(o.MemberCount), 'team-member-count'),
        stat('Last activity', formatDateTime(o.LastActivityAt), 'team-last-activity'),
      );
    },
  };
}

// "Progress": each discipline's bar, its levels (the current one marked) and quests.

import { h, progressBar } from '../../dom';
import { colorClass, formatNumber, formatPercent } from '../../format';
import { disciplineHref } from '../../router';
import type { DisciplineProgress, Overview } from '../../types';

export function disciplineProgress(d: DisciplineProgress): HTMLElement {
  return h(
    'section',
    { class: `discipline-progress color-${colorClass(d.Color)}`, 'data-discipline-id': d.DisciplineId, 'data-testid': 'discipline-progress', 'aria-labelledby': `dp-${d.DisciplineId}` },
    h(
      'h3',
      { id: `dp-${d.DisciplineId}` },
      h('span', { class: `dot color-${colorClass(d.Color)}`, 'aria-hidden': 'true' }),
      h('a', { href: disciplineHref(d.DisciplineId) }, d.Title),
    ),
    progressBar(d.Percent, `${d.Title}: ${formatPercent(d.Percent)} complete`, 'discipline-progress-bar', { 'data-discipline-id': d.DisciplineId }),
    h(
      'p',
      { class: 'muted small' },
      `${formatPercent(d.Percent)} · ${formatNumber(d.TasksCompleted)} of ${formatNumber(d.TasksTotal)} tasks · ${formatNumber(d.PointsEarned)} of ${formatNumber(d.PointsTotal)} points`,
    ),
    h(
      'ol',
      { class: 'levels' },
      d.Levels.map((level, i) => {
        const current = level.LevelId === d.CurrentLevelId;
        return h(
          'li',
          { class: current ? 'level current' : 'level', 'data-level-id': level.LevelId, 'data-testid': 'level-progress', 'aria-current': current ? 'step' : null },
          h(
            'div',
            { class: 'level-head' },
            h('span', { class: 'level-title' }, `Level ${i + 1}: ${level.Title}`, current ? h('span', { class: 'badge' }, 'Current') : null),
            h('span', { class: 'muted small' }, `${formatNumber(level.TasksCompleted)}/${formatNumber(level.TasksTotal)} tasks · ${formatPercent(level.Percent)}`),
          ),
          progressBar(level.Percent, `Level ${i + 1} ${level.Title}: ${formatPercent(level.Percent)} complete`, 'level-progress-bar', {
            'data-level-id': level.LevelId,
          }),
          level.Quests.length
            ? h(
                'ul',
                { class: 'quests', 'aria-label': `Quests of level ${i + 1}` },
                level.Quests.map((q) =>
                  h(
                    'li',
                    { class: 'quest', 'data-quest-id': q.QuestId, 'data-testid': 'quest-progress' },
                    h('span', { class: 'quest-title' }, q.Title),
                    progressBar(q.Percent, `${q.Title}: ${formatPercent(q.Percent)} complete`, 'quest-progress-bar', { 'data-quest-id': q.QuestId }),
                    h('span', { class: 'muted small' }, `${formatNumber(q.TasksCompleted)}/${formatNumber(q.TasksTotal)}`),
                  ),
                ),
              )
            : null,
        );
      }),
    ),
  );
}

export interface ProgressSection {
  section: HTMLElement;
  show(o: Overview): void;
}

export function progressSection(): ProgressSection {
  const progress = h('div', { id: 'team-progress', 'data-testid': 'team-progress' }, h('p', { class: 'muted' }, 'Loading…'));
  return {
    section: h('section', { 'aria-labelledby': 'progress-heading' }, h('h2', { id: 'progress-heading' }, 'Progress'), progress),
    show(o: Overview): void {
      progress.replaceChildren(
        ...(o.Disciplines.length ? o.Disciplines.map(disciplineProgress) : [h('p', { class: 'muted' }, 'No disciplines yet.')]),
      );
      progress.dataset['loaded'] = 'true';
    },
  };
}

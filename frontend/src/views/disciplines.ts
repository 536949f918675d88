import { h, tableWrap, replaceChildren } from '../dom';
import { handleError, type Ctx } from '../context';
import { colorClass, formatNumber, safeHttpUrl } from '../format';
import { disciplineEditHref, disciplineHref } from '../router';
import { deleteDisciplineControl } from './editor';
import type { Resource } from '../types';

export function renderDisciplines(ctx: Ctx): void {
  const tbody = h('tbody');
  const table = h(
    'table',
    { id: 'disciplines-table', class: 'data', 'data-testid': 'disciplines-table' },
    h('caption', { class: 'visually-hidden' }, 'Disciplines'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        h('th', { scope: 'col' }, 'Discipline'),
        h('th', { scope: 'col', class: 'num' }, 'Levels'),
        h('th', { scope: 'col', class: 'num' }, 'Quests'),
        h('th', { scope: 'col', class: 'num' }, 'Tasks'),
        h('th', { scope: 'col', class: 'num' }, 'Points'),
      ),
    ),
    tbody,
  );
  replaceChildren(
    ctx.view,
    h('h1', { tabindex: -1 }, 'Disciplines'),
    ctx.admin ? h('p', null, h('a', { href: '#/disciplines/new', id: 'new-discipline', class: 'button-link primary', 'data-testid': 'new-discipline' }, 'New discipline')) : null,
    tableWrap('Disciplines', table),
  );

  void (async () => {
    try {
      const list = await ctx.disciplines();
      if (!ctx.isCurrent()) return;
      tbody.replaceChildren(
        ...(list.length
          ? list.map((d) =>
              h(
                'tr',
                { 'data-discipline-id': d.Id },
                h(
                  'th',
                  { scope: 'row' },
                  h('span', { class: `dot color-${colorClass(d.Color)}`, 'aria-hidden': 'true' }),
                  h('a', { href: disciplineHref(d.Id) }, d.Title),
                  d.OrganizationId === null ? h('span', { class: 'badge' }, 'Global') : null,
                ),
                h('td', { class: 'num' }, formatNumber(d.LevelCount)),
                h('td', { class: 'num' }, formatNumber(d.QuestCount)),
                h('td', { class: 'num' }, formatNumber(d.TaskCount)),
                h('td', { class: 'num' }, formatNumber(d.PointsTotal)),
              ),
            )
          : [
              h(
                'tr',
                null,
                h(
                  'td',
                  { colspan: 5, class: 'empty' },
                  ctx.admin ? ['No disciplines yet. ', h('a', { href: '#/disciplines/new' }, 'Create the first one'), ' or import a document.'] : 'No disciplines yet: an admin creates them.',
                ),
              ),
            ]),
      );
      table.dataset['loaded'] = 'true';
    } catch (err) {
      handleError(ctx, err);
    }
  })();
}

function resources(list: Resource[] | undefined): HTMLElement | null {
  if (!list || list.length === 0) return null;
  return h(
    'ul',
    { class: 'resources', 'aria-label': 'Resources' },
    [...list]
      .sort((a, b) => a.Order - b.Order)
      .map((r) => {
        const href = safeHttpUrl(r.Url);
        return h(
          'li',
          { 'data-resource-id': r.Id },
          h('span', { class: 'badge' }, r.Kind || 'Link'),
          ' ',
          href ? h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, r.Title, h('span', { class: 'visually-hidden' }, ' (opens in a new tab)')) : r.Title,
          r.Description ? h('span', { class: 'muted' }, ` — ${r.Description}`) : null,
        );
      }),
  );
}

const byOrder = <T extends { Order: number }>(items: T[] | undefined): T[] => [...(items ?? [])].sort((a, b) => a.Order - b.Order);

export function renderDiscipline(ctx: Ctx, id: string): void {
  replaceChildren(ctx.view, h('h1', { tabindex: -1 }, 'Discipline'), h('p', { class: 'muted' }, 'Loading…'));
  void (async () => {
    try {
      const res = await ctx.api.disciplineWithEtag(id);
      const d = res.data;
      if (!ctx.isCurrent()) return;
      document.title = `${d.Title} · Questline`;
      const levels = byOrder(d.Levels);
      replaceChildren(ctx.view, 
        h('p', { class: 'crumbs' }, h('a', { href: '#/disciplines' }, 'Disciplines')),
        h('h1', { tabindex: -1, class: `discipline-title color-${colorClass(d.Color)}` }, d.Title),
        d.Description ? h('p', null, d.Description) : null,
        ctx.admin && (d.OrganizationId !== null)
          ? h(
              'div',
              { class: 'actions-row' },
              h('a', { href: disciplineEditHref(d.Id), id: 'edit-discipline', class: 'button-link primary', 'data-testid': 'edit-discipline' }, 'Edit'),
              deleteDisciplineControl(ctx, d, res.etag),
            )
          : null,
        resources(d.Resources),
        h(
          'ol',
          { class: 'tree', id: 'discipline-tree', 'data-loaded': 'true', 'data-testid': 'discipline-tree', 'data-discipline-id': d.Id },
          levels.map((level, li) =>
            h(
              'li',
              { class: 'tree-level', 'data-level-id': level.Id },
              h('h2', { class: 'h3' }, `Level ${li + 1}: ${level.Title}`),
              level.Description ? h('p', null, level.Description) : null,
              resources(level.Resources),
              h(
                'ol',
                { class: 'tree-quests' },
                byOrder(level.Quests).map((quest) =>
                  h(
                    'li',
                    { class: 'tree-quest', 'data-quest-id': quest.Id },
                    h('h3', { class: 'h4' }, quest.Title),
                    quest.Description ? h('p', null, quest.Description) : null,
                    resources(quest.Resources),
                    h(
                      'ol',
                      { class: 'tree-tasks' },
                      byOrder(quest.Tasks).map((task) =>
                        h(
                          'li',
                          { class: 'tree-task', 'data-task-id': task.Id, 'data-testid': 'discipline-task' },
                          h('span', { class: 'task-title' }, task.Title),
                          ' ',
                          h('span', { class: 'points', 'data-points': task.Points }, `${formatNumber(task.Points)} points`),
                          task.Description ? h('p', { class: 'muted' }, task.Description) : null,
                          resources(task.Resources),
                        ),
                      ),
                    ),
                  ),
                ),
              ),
            ),
          ),
        ),
        levels.length === 0 ? h('p', { class: 'muted' }, 'This discipline has no levels yet.') : null,
      );
    } catch (err) {
      handleError(ctx, err);
    }
  })();
}

import { createGraph } from '../chart';
import { h } from '../dom';
import { fillDisciplineSelect, handleError, type Ctx } from '../context';
import { formatDateTime, localInputToIso } from '../format';

export const GRAPH_REFRESH_MS = 10000;

interface GraphFilter {
  discipline: string | null;
  from: string; // datetime-local values (local time), '' when open
  to: string;
}

let filter: GraphFilter = { discipline: null, from: '', to: '' };

export function renderGraph(ctx: Ctx): void {
  const select = h(
    'select',
    { id: 'graph-discipline', name: 'discipline', 'data-testid': 'graph-discipline-filter' },
    h('option', { value: '' }, 'All disciplines'),
  );
  const from = h('input', { id: 'graph-from', name: 'from', type: 'datetime-local', value: filter.from, 'data-testid': 'graph-from' });
  const to = h('input', { id: 'graph-to', name: 'to', type: 'datetime-local', value: filter.to, 'data-testid': 'graph-to' });
  const form = h(
    'form',
    { id: 'graph-form', class: 'filters', role: 'search', 'aria-label': 'Graph filter', 'data-testid': 'graph-form' },
    h('div', { class: 'field' }, h('label', { for: 'graph-discipline' }, 'Discipline'), select),
    h('div', { class: 'field' }, h('label', { for: 'graph-from' }, 'From'), from),
    h('div', { class: 'field' }, h('label', { for: 'graph-to' }, 'To'), to),
    h(
      'div',
      { class: 'field actions' },
      h('button', { type: 'submit', id: 'graph-apply', class: 'primary' }, 'Apply'),
      h('button', { type: 'button', id: 'graph-reset', onclick: () => reset() }, 'Reset'),
    ),
  );
  const graph = createGraph({
    label: 'Cumulative score of the top 10 teams over time',
    containerId: 'graph-chart',
    canvasId: 'graph-canvas',
    legendId: 'graph-legend',
  });
  ctx.onCleanup(() => graph.destroy());
  const status = h('p', { id: 'graph-updated', class: 'muted small' }, 'Loading…');

  ctx.view.replaceChildren(
    h('h1', { tabindex: -1 }, 'Progress graph'),
    h('p', { class: 'muted' }, 'Cumulative score of the top 10 teams. Admin and archived teams are not shown.'),
    form,
    graph.container,
    h('h2', { class: 'h3' }, 'Teams'),
    graph.legend,
    status,
  );

  void fillDisciplineSelect(ctx, select, filter.discipline);
  select.addEventListener('change', () => {
    filter = { ...filter, discipline: select.value || null };
    void load();
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    filter = { discipline: select.value || null, from: from.value, to: to.value };
    void load();
  });

  function reset(): void {
    filter = { discipline: null, from: '', to: '' };
    select.value = '';
    from.value = '';
    to.value = '';
    void load();
  }

  let timer: number | undefined;
  ctx.onCleanup(() => window.clearTimeout(timer));

  async function load(): Promise<void> {
    window.clearTimeout(timer);
    const asked = filter;
    const fromIso = localInputToIso(asked.from);
    const toIso = localInputToIso(asked.to);
    if (fromIso && toIso && fromIso > toIso) {
      ctx.showError(new Error('“From” must be before “To”.'), form);
      return;
    }
    try {
      const series = await ctx.api.leaderboardGraph({ top: 10, discipline: asked.discipline, from: fromIso, to: toIso });
      if (!ctx.isCurrent() || asked !== filter) return;
      ctx.clearMessages();
      graph.update(series, toIso ? Date.parse(toIso) : Date.now(), fromIso ? Date.parse(fromIso) : null);
      graph.container.dataset['loaded'] = 'true';
      status.textContent = toIso
        ? `Window ${fromIso ? formatDateTime(fromIso) : 'start'} – ${formatDateTime(toIso)}.`
        : `Updated ${formatDateTime(Date.now())} · refreshes every ${GRAPH_REFRESH_MS / 1000} s.`;
    } catch (err) {
      handleError(ctx, err, form);
    }
    // A window that ends in the past does not change; one open to now does.
    if (ctx.isCurrent() && !toIso) timer = window.setTimeout(() => void load(), GRAPH_REFRESH_MS);
  }

  void load();
}

// Progress graphs with Chart.js 4: a linear x axis of epoch milliseconds (no
// date adapter needed), cumulative score as a step function.

import {
  Chart,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
  type ChartDataset,
  type TooltipItem,
} from 'chart.js';
import { h } from './dom';
import { formatNumber, timeTickLabel, timeTicks, toStepPoints, type StepPoint } from './format';
import type { Series } from './types';

Chart.register(LineController, LineElement, PointElement, LinearScale, Tooltip);

// Okabe–Ito first (colour-blind safe), then further distinct hues: ten teams.
export const PALETTE = [
  '#0072B2', '#E69F00', '#009E73', '#CC79A7', '#D55E00',
  '#56B4E9', '#7A5C00', '#000000', '#6A3D9A', '#B22222',
];
const DASHES: number[][] = [[], [6, 3], [2, 2], [8, 3, 2, 3]];

const tooltipTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export interface GraphHandle {
  /** The element tests look at: carries data-team-ids. */
  container: HTMLElement;
  legend: HTMLElement;
  update(series: Series[], endMs: number | null, startMs?: number | null): void;
  destroy(): void;
}

/** A chart and its HTML legend (the canvas legend is not accessible, so it is off). */
export function createGraph(opts: { label: string; containerId: string; canvasId: string; legendId: string }): GraphHandle {
  const canvas = h('canvas', { id: opts.canvasId, role: 'img', 'aria-label': opts.label, 'data-testid': 'graph-canvas' });
  const container = h('div', { id: opts.containerId, class: 'chart', 'data-testid': 'graph-chart', 'data-team-ids': '' }, canvas);
  const legend = h('ul', { id: opts.legendId, class: 'legend', 'data-testid': 'graph-legend', 'aria-label': `${opts.label}: teams` });
  // The step of the ticks built last: labels show dates for steps of days.
  let tickStep = 0;
  let maxTicks = window.innerWidth < 540 ? 4 : 7;

  const chart = new Chart(canvas, {
    type: 'line',
    data: { datasets: [] },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      parsing: false,
      normalized: true,
      onResize: (_chart, size) => {
        maxTicks = size.width < 500 ? 4 : 7;
      },
      interaction: { mode: 'nearest', intersect: false, axis: 'x' },
      scales: {
        x: {
          type: 'linear',
          // Chart.js places linear ticks at round numbers of milliseconds; a time
          // axis wants them on whole hours or midnights (local time).
          afterBuildTicks: (axis) => {
            const { step, values } = timeTicks(axis.min, axis.max, maxTicks);
            tickStep = step;
            if (values.length) axis.ticks = values.map((value) => ({ value }));
          },
          ticks: {
            maxRotation: 0,
            callback: (value) => timeTickLabel(Number(value), tickStep),
          },
        },
        y: {
          type: 'linear',
          beginAtZero: true,
          title: { display: true, text: 'Score' },
          ticks: { precision: 0 },
        },
      },
      plugins: {
        tooltip: {
          callbacks: {
            title: (items: TooltipItem<'line'>[]) => {
              const first = items[0];
              return first ? tooltipTime.format((first.raw as StepPoint).x) : '';
            },
            label: (item: TooltipItem<'line'>) => `${item.dataset.label ?? ''}: ${formatNumber((item.raw as StepPoint).y)}`,
          },
        },
      },
    },
  });

  return {
    container,
    legend,
    update(series: Series[], endMs: number | null, startMs: number | null = null): void {
      const datasets: ChartDataset<'line', StepPoint[]>[] = series.map((s, i) => {
        const color = PALETTE[i % PALETTE.length] ?? '#000';
        return {
          label: s.Name,
          data: toStepPoints(s.Points, endMs),
          stepped: true,
          borderColor: color,
          backgroundColor: color,
          borderWidth: 2,
          borderDash: DASHES[Math.floor(i / 3) % DASHES.length] ?? [],
          pointRadius: 2,
          pointHoverRadius: 5,
        };
      });
      const xs = datasets.flatMap((d) => d.data.map((p) => p.x));
      // The axis spans exactly the window (or the data), not rounded-out ticks.
      const min = startMs ?? (xs.length ? Math.min(...xs) : null);
      const max = endMs ?? (xs.length ? Math.max(...xs) : null);
      const x = chart.options.scales?.['x'];
      if (x) {
        x.min = min ?? undefined;
        x.max = max !== null && min !== null && max > min ? max : undefined;
      }
      chart.data.datasets = datasets;
      chart.update();

      container.dataset['teamIds'] = series.map((s) => s.TeamId).join(',');
      canvas.setAttribute(
        'aria-label',
        series.length
          ? `${opts.label}: ${series.map((s) => `${s.Name} ${formatNumber(s.Points.at(-1)?.Score ?? 0)}`).join(', ')}`
          : `${opts.label}: no teams`,
      );
      legend.replaceChildren(
        ...series.map((s, i) => {
          const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true' });
          swatch.style.backgroundColor = PALETTE[i % PALETTE.length] ?? '#000';
          return h(
            'li',
            { 'data-team-id': s.TeamId, 'data-testid': 'graph-legend-item' },
            swatch,
            h('a', { href: `#/team/${encodeURIComponent(s.TeamId)}` }, s.Name),
            ' ',
            h('span', { class: 'muted' }, formatNumber(s.Points.at(-1)?.Score ?? 0)),
          );
        }),
      );
      if (!series.length) legend.append(h('li', { class: 'muted' }, 'No teams to show.'));
    },
    destroy(): void {
      chart.destroy();
    },
  };
}

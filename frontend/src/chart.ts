// Progress graphs with Chart.js 4: a time x axis (Chart.js's time scale with the
// date-fns adapter, bundled), cumulative score as a step function.

import 'chartjs-adapter-date-fns';
import {
  Chart,
  LinearScale,
  TimeScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
  type ChartDataset,
  type TooltipItem,
} from 'chart.js';
import { h } from './dom';
import { formatNumber, toStepPoints, type StepPoint } from './format';
import type { Series } from './types';

Chart.register(LineController, LineElement, PointElement, LinearScale, TimeScale, Tooltip);

// Axis text and grid follow the system's light or dark setting.
const dark = window.matchMedia?.('(prefers-color-scheme: dark)');
function applyTheme(): void {
  const isDark = dark?.matches ?? false;
  Chart.defaults.color = isDark ? '#d5d8e6' : '#3d4255';
  Chart.defaults.borderColor = isDark ? 'rgba(255,255,255,0.14)' : 'rgba(0,0,0,0.1)';
}
applyTheme();

// Okabe–Ito first (colour-blind safe), then further distinct hues: ten teams.
export const PALETTE = [
  '#0072B2', '#E69F00', '#009E73', '#CC79A7', '#D55E00',
  '#56B4E9', '#7A5C00', '#000000', '#6A3D9A', '#B22222',
];
const PALETTE_DARK = [
  '#56B4E9', '#E69F00', '#2EC4A0', '#E08DC0', '#FF7F3F',
  '#9FD8FF', '#E0C060', '#F0F0F0', '#B792E8', '#FF6B6B',
];
const palette = (): string[] => ((dark?.matches ?? false) ? PALETTE_DARK : PALETTE);
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
export function createGraph(opts: {
  label: string;
  containerId: string;
  canvasId: string;
  legendId: string;
  emptyNoTeams?: string;
  emptyNoProgress?: string;
}): GraphHandle {
  opts.emptyNoTeams ??= 'No teams yet: create teams (Teams or Onboarding), then record the tasks they complete.';
  opts.emptyNoProgress ??= 'No progress in this period yet: mark tasks complete on a team’s page and the scores appear here.';
  const canvas = h('canvas', { id: opts.canvasId, role: 'img', 'aria-label': opts.label, 'data-testid': 'graph-canvas' });
  const container = h('div', { id: opts.containerId, class: 'chart', 'data-testid': 'graph-chart', 'data-team-ids': '' }, canvas);
  const legend = h('ul', { id: opts.legendId, class: 'legend', 'data-testid': 'graph-legend', 'aria-label': `${opts.label}: teams` });
  const empty = h('p', { class: 'empty-state', hidden: true, 'data-testid': 'graph-empty' }, '');
  container.append(empty);

  const chart = new Chart(canvas, {
    type: 'line',
    data: { datasets: [] },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      parsing: false,
      normalized: true,
      interaction: { mode: 'nearest', intersect: false, axis: 'x' },
      scales: {
        x: {
          type: 'time',
          // Ticks on whole hours, days… chosen by the time scale; labels in local time.
          time: {
            tooltipFormat: 'PPpp',
            displayFormats: { minute: 'HH:mm', hour: 'HH:mm', day: 'd MMM', week: 'd MMM', month: 'MMM yyyy' },
          },
          ticks: { maxRotation: 0, autoSkip: true, maxTicksLimit: window.innerWidth < 540 ? 4 : 8, major: { enabled: true } },
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
      const colors = palette();
      const datasets: ChartDataset<'line', StepPoint[]>[] = series.map((s, i) => {
        const color = colors[i % colors.length] ?? '#000';
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
          swatch.style.backgroundColor = colors[i % colors.length] ?? '#000';
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
      // Empty state: say why nothing is drawn, and what to do about it.
      const anyScore = series.some((s) => s.Points.some((p) => p.Score !== 0));
      empty.hidden = anyScore;
      empty.textContent = (!series.length
        ? opts.emptyNoTeams
        : startMs !== null
          ? `${opts.emptyNoProgress ?? ''} Widen the window if you expected some.`
          : opts.emptyNoProgress) ?? '';
    },
    destroy(): void {
      chart.destroy();
    },
  };
}

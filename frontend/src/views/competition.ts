// The leaderboard's competition switches: a season (its window, frozen for members
// during its freeze) and a bracket (the organization's team tags).

import { h, replaceChildren } from '../dom';
import { handleError, type Ctx } from '../context';

export interface SeasonSummary {
  Id: string;
  Name: string;
  Phase: 'Upcoming' | 'Running' | 'Frozen' | 'Ended';
}

interface TaggedTeam {
  Tags: string[];
}

export interface CompetitionChoice {
  season: string | null;
  tag: string | null;
}

/** Teams read for their tags (the first page of `GET /team`). */
export const BRACKET_TEAMS = 1000;

// Kept across navigation, so coming back shows the same choice.
const chosen: CompetitionChoice = { season: null, tag: null };

export function competitionChoice(): CompetitionChoice {
  return { ...chosen };
}

/** The organization's tags, each once (ignoring case, first spelling kept), sorted. */
export function bracketsOf(teams: TaggedTeam[]): string[] {
  const found = new Map<string, string>();
  for (const team of teams) {
    for (const tag of team.Tags) {
      const key = tag.toLocaleLowerCase();
      if (!found.has(key)) found.set(key, tag);
    }
  }
  return [...found.values()].sort((a, b) => a.localeCompare(b));
}

export function seasonLabel(season: SeasonSummary): string {
  return season.Phase === 'Running' ? season.Name : `${season.Name} (${season.Phase.toLowerCase()})`;
}

/** The season and bracket fields of the leaderboard's filter form. */
export function competitionFilters(ctx: Ctx, onChange: () => void): HTMLElement[] {
  const season = h(
    'select',
    { id: 'leaderboard-season', name: 'season', 'data-testid': 'season-filter' },
    h('option', { value: '' }, 'All time'),
  );
  const bracket = h(
    'select',
    { id: 'leaderboard-bracket', name: 'tag', 'data-testid': 'bracket-filter' },
    h('option', { value: '' }, 'All teams'),
  );
  season.addEventListener('change', () => {
    chosen.season = season.value || null;
    onChange();
  });
  bracket.addEventListener('change', () => {
    chosen.tag = bracket.value || null;
    onChange();
  });
  void fill(ctx, season, bracket);
  return [
    h('div', { class: 'field' }, h('label', { for: 'leaderboard-season' }, 'Season'), season),
    h('div', { class: 'field' }, h('label', { for: 'leaderboard-bracket' }, 'Bracket'), bracket),
  ];
}

async function fill(ctx: Ctx, season: HTMLSelectElement, bracket: HTMLSelectElement): Promise<void> {
  try {
    const [seasons, teams] = await Promise.all([
      ctx.api.request<SeasonSummary[]>('GET', '/season'),
      ctx.api.request<TaggedTeam[]>('GET', '/team', undefined, { query: { limit: BRACKET_TEAMS } }),
    ]);
    if (!ctx.isCurrent()) return;
    replaceChildren(
      season,
      h('option', { value: '' }, 'All time'),
      seasons.data.map((s) => h('option', { value: s.Id, selected: s.Id === chosen.season }, seasonLabel(s))),
    );
    replaceChildren(
      bracket,
      h('option', { value: '' }, 'All teams'),
      bracketsOf(teams.data).map((tag) => h('option', { value: tag, selected: tag === chosen.tag }, tag)),
    );
  } catch (err) {
    handleError(ctx, err);
  }
}

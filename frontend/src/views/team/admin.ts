// "Admin actions": the admin-team and survey switches, the team's management, and
// the forms that add a member and mark a task complete.

import { busy, handleError } from '../../context';
import { h } from '../../dom';
import { addMemberForm, completeTaskForm } from './admin-forms';
import { manageSection } from './manage';
import type { TeamPage } from './page';

export interface AdminControls {
  section: HTMLElement;
  setAdminFlag(on: boolean): void;
  setSurvey(done: boolean): void;
  setStatus(status: string): void;
  setTeam(name: string, tags: string[], force?: boolean): void;
}

export function adminSection(page: TeamPage): AdminControls {
  const { ctx, teamId } = page;
  const manage = manageSection(page);
  const surveyButton = h(
    'button',
    { type: 'button', id: 'survey-switch', class: 'switch', 'aria-pressed': 'false', 'data-testid': 'survey-switch' },
    h('span', { class: 'switch-track', 'aria-hidden': 'true' }, h('span', { class: 'switch-thumb' })),
    ' Survey completed',
  );
  surveyButton.addEventListener('click', () => {
    void busy(surveyButton, async () => {
      try {
        const done = surveyButton.getAttribute('aria-pressed') !== 'true';
        const team = await ctx.api.setSurvey(teamId, done);
        if (!ctx.isCurrent()) return;
        surveyButton.setAttribute('aria-pressed', String(team.IsSurveyCompleted));
        ctx.notify(team.IsSurveyCompleted ? `${team.Name}’s survey is recorded as completed.` : `${team.Name}’s survey is no longer marked completed.`);
        await page.reload.overview();
      } catch (err) {
        handleError(ctx, err);
      }
    });
  });
  // Switch for the admin-team flag: a toggle button (aria-pressed).
  const switchButton = h(
    'button',
    { type: 'button', id: 'admin-flag-switch', class: 'switch', 'aria-pressed': 'false', 'aria-describedby': 'admin-flag-help', 'data-testid': 'admin-flag-switch' },
    h('span', { class: 'switch-track', 'aria-hidden': 'true' }, h('span', { class: 'switch-thumb' })),
    ' Admin team',
  );
  switchButton.addEventListener('click', () => {
    void busy(switchButton, async () => {
      try {
        const team = await ctx.api.switchAdminTeam(teamId);
        if (!ctx.isCurrent()) return;
        switchButton.setAttribute('aria-pressed', String(team.IsAdminTeam));
        ctx.notify(
          team.IsAdminTeam
            ? `“${team.Name}” is now an admin team: left out of the leaderboard and graphs.`
            : `“${team.Name}” is no longer an admin team: back on the leaderboard and graphs.`,
        );
        await page.reload.overview();
      } catch (err) {
        handleError(ctx, err);
      }
    });
  });

  const memberForm = addMemberForm(page);
  const taskForm = completeTaskForm(page);

  const section = h(
    'section',
    { class: 'admin-actions', 'aria-labelledby': 'admin-heading', 'data-testid': 'admin-actions' },
    h('h2', { id: 'admin-heading' }, 'Admin actions'),
    h(
      'div',
      { class: 'card switch-row' },
      switchButton,
      h('p', { id: 'admin-flag-help', class: 'muted small' }, 'Admin teams (the organization’s own management) are left out of the leaderboard and the graphs.'),
      surveyButton,
    ),
    manage.card,
    h('div', { class: 'admin-forms' }, memberForm, taskForm),
  );
  return {
    section,
    setAdminFlag(on: boolean): void {
      switchButton.setAttribute('aria-pressed', String(on));
    },
    setSurvey(done: boolean): void {
      surveyButton.setAttribute('aria-pressed', String(done));
    },
    setStatus: manage.setStatus,
    setTeam: manage.setTeam,
  };
}

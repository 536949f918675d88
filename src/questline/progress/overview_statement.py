"""The one statement a team's overview reads: the team's row and its progress.

The counts are aggregated in SQL (one GROUP BY over quests ⟕ tasks ⟕ the team's
completions), so the overview costs the same few statements whatever the number of
disciplines, levels, quests and tasks.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Text, bindparam, func, literal, select, true
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import aliased

from questline.disciplines.models import Task
from questline.progress.learner_records import HintUnlock, TaskAttempt
from questline.progress.models import ScoreEvent, TaskCompletion
from questline.progress.pending import pending_submissions
from questline.teams import service as teams_service
from questline.teams.models import Team
from questline.teams.ranking import teams_ahead


def _rank_expression() -> Any:
    """1 + the ranked teams ahead of the outer team row (three tight index ranges)."""
    ahead = aliased(Team)

    def count(*bounds: Any) -> Any:
        return (
            select(func.count())
            .select_from(ahead)
            .where(
                ahead.organization_id == Team.organization_id,
                ahead.is_ranked == true(),
                *bounds,
            )
            .correlate(Team)
            .scalar_subquery()
        )

    first, second, third = (count(*bounds) for bounds in teams_ahead(ahead, Team))
    return first + second + third


@functools.cache
def overview_query(dialect: str, rank_in_sql: bool = True) -> Any:
    """The team's row (rank, member count, last activity) and, in its last column, its
    completions per quest aggregated to JSON in SQL (``json_agg`` on PostgreSQL,
    ``json_group_array`` on SQLite): one statement, one row.
    Built once: composing a statement costs more CPU than running it (profiled)."""
    org: Any = bindparam("org")
    team: Any = bindparam("team")
    last_activity = (
        select(func.max(ScoreEvent.at))
        .where(ScoreEvent.organization_id == Team.organization_id, ScoreEvent.team_id == Team.id)
        .correlate(Team)
        .scalar_subquery()
    )
    done = TaskCompletion
    grouped = (
        select(
            Task.quest_id.label("quest_id"),
            func.count().label("done"),
            func.sum(done.points).label("earned"),
        )
        .select_from(done)
        .join(Task, Task.id == done.task_id)
        .where(done.organization_id == org, done.team_id == team)
        .group_by(Task.quest_id)
        .subquery("per_quest")
    )
    if dialect == "postgresql":
        element = func.json_build_array(grouped.c.quest_id, grouped.c.done, grouped.c.earned)
        aggregated = func.json_agg(element)
    else:
        element = func.json_array(grouped.c.quest_id, grouped.c.done, grouped.c.earned)
        aggregated = func.json_group_array(element)
    per_quest = select(sql_cast(aggregated, Text)).select_from(grouped).scalar_subquery()

    def as_json(*columns: Any, where: Any, group: Any = None) -> Any:
        """The rows of ``columns`` as one JSON array of arrays (text), in SQL."""
        inner = select(*columns).where(*where)
        if group is not None:
            inner = inner.group_by(group)
        rows = inner.subquery()
        if dialect == "postgresql":
            aggregate = func.json_agg(func.json_build_array(*rows.c))
        else:
            aggregate = func.json_group_array(func.json_array(*rows.c))
        return select(sql_cast(aggregate, Text)).select_from(rows).scalar_subquery()

    completed = as_json(done.task_id, where=(done.organization_id == org, done.team_id == team))
    attempted = as_json(
        TaskAttempt.task_id,
        func.count().label("n"),
        where=(TaskAttempt.organization_id == org, TaskAttempt.team_id == team),
        group=TaskAttempt.task_id,
    )
    unlocked = as_json(
        HintUnlock.task_id,
        HintUnlock.hint_index,
        where=(HintUnlock.organization_id == org, HintUnlock.team_id == team),
    )
    return select(
        Team.id,
        Team.name,
        Team.status,
        Team.is_admin_team,
        Team.is_survey_completed,
        Team.score,
        Team.is_ranked,
        Team.tasks_completed,
        teams_service.member_count_column(),
        last_activity,
        _rank_expression() if rank_in_sql else literal(0),
        per_quest,
        completed,
        attempted,
        unlocked,
        pending_submissions(dialect, org, team),
        Team.score_reached_at,
    ).where(Team.organization_id == org, Team.id == team)

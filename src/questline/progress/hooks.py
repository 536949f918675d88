"""What progress does when another domain's change touches it.

The discipline domain calls ``before_tasks_removed`` before it deletes tasks (a whole
discipline on DELETE, or tasks left out of a PUT document); the application hands it
to that domain (``app.state.tasks_removed``, read by
``questline.disciplines.service.tasks_removed_of``), so that disciplines import nothing
of progress.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.progress import schemas
from questline.progress.models import ScoreChange, TaskCompletion
from questline.progress.scores import Step, apply_steps, lock_teams
from questline.storage.db import utcnow
from questline.storage.tenancy import across_a_global_discipline
from questline.web.errors import Conflict

CHUNK = 500
"""Task ids per ``IN (…)`` list: far below every backend's bound-parameter limit."""


def _chunks(ids: Sequence[uuid.UUID]) -> Iterator[list[uuid.UUID]]:
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), CHUNK):
        yield unique[start : start + CHUNK]


@across_a_global_discipline
async def before_tasks_removed(
    session: AsyncSession,
    *,
    discipline_id: uuid.UUID,
    task_ids: Sequence[uuid.UUID],
    force: bool,
) -> None:
    """Refuse (409 naming how many teams are affected) when teams completed any of
    ``task_ids``, unless ``force``; with ``force``, withdraw that progress first
    (negative steps in the score history, scores lowered).

    Teams of every organization count: a global discipline's tasks are completed
    across organizations. With row-level security that is the marked path across
    organizations (``@across_a_global_discipline``), taken only by an operator on a
    global discipline; an organization's change of its own discipline sees only its
    own teams.
    """
    # (organization_id, team_id) of every team that completed any of the tasks.
    teams: set[tuple[uuid.UUID, uuid.UUID]] = set()
    for chunk in _chunks(task_ids):
        rows = await session.execute(
            select(TaskCompletion.organization_id, TaskCompletion.team_id)
            .where(
                TaskCompletion.discipline_id == discipline_id,
                TaskCompletion.task_id.in_(chunk),
            )
            .distinct()
        )
        teams.update((row[0], row[1]) for row in rows)
    if not teams:
        return
    if not force:
        noun = "team has" if len(teams) == 1 else "teams have"
        raise Conflict(
            f"{len(teams)} {noun} completed tasks that this change removes; "
            "send ?force=true to withdraw that progress (their scores go down)."
        )
    await lock_teams(session, keys=sorted(teams))
    now = utcnow()
    removed_rows: list[tuple[dt.datetime, Step]] = []
    for chunk in _chunks(task_ids):
        removed = await session.execute(
            delete(TaskCompletion)
            .where(
                TaskCompletion.discipline_id == discipline_id,
                TaskCompletion.task_id.in_(chunk),
            )
            .returning(
                TaskCompletion.organization_id,
                TaskCompletion.team_id,
                TaskCompletion.task_id,
                TaskCompletion.points,
                TaskCompletion.completed_at,
            )
        )
        removed_rows += [
            (
                row.completed_at,
                Step(
                    organization_id=row.organization_id,
                    team_id=row.team_id,
                    task_id=row.task_id,
                    discipline_id=discipline_id,
                    kind=ScoreChange.TASK_REMOVED,
                    delta=-row.points,
                    at=now,
                ),
            )
            for row in removed
        ]
    # Per team, withdraw in the order the tasks were completed (a stable history).
    removed_rows.sort(key=lambda r: (r[1].organization_id, r[1].team_id, r[0], r[1].task_id))
    scores = await apply_steps(session, steps=[step for _, step in removed_rows])
    await _record_withdrawals(session, removed_rows, scores)


async def _record_withdrawals(
    session: AsyncSession, removed: list[tuple[dt.datetime, Step]], scores: Sequence[int]
) -> None:
    """One ``progress.withdrawn`` event per completion taken back, in its organization."""
    by_org: dict[uuid.UUID, list[schemas.Completion]] = {}
    for (completed_at, step), score in zip(removed, scores, strict=True):
        by_org.setdefault(step.organization_id, []).append(
            schemas.Completion(
                team_id=step.team_id,
                task_id=step.task_id,
                discipline_id=step.discipline_id,
                points=-step.delta,
                completed_at=completed_at,
                score=score,
            )
        )
    for org_id, items in by_org.items():
        await events.record_many(
            session, organization_id=org_id, type="progress.withdrawn", items=items
        )

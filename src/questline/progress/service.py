"""Progress rules: completing tasks (the ORM path the demo loader uses), and reading
completions. The endpoints write through ``questline.progress.record`` (the same rules
in two statements).

Completing is idempotent per team and task (``INSERT … ON CONFLICT DO NOTHING`` on the
primary key): only the request that inserted the row changes the score, so twenty
concurrent completions of one task count once. The team row is locked first (the
same order as ``hooks.before_tasks_removed``), and the score changes in the same
transaction through the ledger in ``scores``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.disciplines.models import Discipline, Task
from questline.disciplines.service import visible_to
from questline.progress import schemas
from questline.progress.models import ScoreChange, TaskCompletion
from questline.progress.scores import Step, apply_steps
from questline.readmodel.versions import bump
from questline.storage.db import insert_ignoring_conflicts, utcnow
from questline.teams import service as teams_service
from questline.teams.models import Team
from questline.web.errors import FieldError, Unprocessable, not_found
from questline.web.metrics import TASKS_COMPLETED, count_on_commit

_completions = TaskCompletion.__table__
CLOCK_SKEW = dt.timedelta(seconds=5)
"""How far in the future a ``CompletedAt`` may be before it is refused (client clocks)."""


@dataclass(frozen=True, slots=True)
class TaskRef:
    id: uuid.UUID
    discipline_id: uuid.UUID
    points: int


@dataclass(frozen=True, slots=True)
class CompletionResult:
    completion: TaskCompletion
    created: bool
    score: int


async def hold_discipline_of_task(session: AsyncSession, *, task_id: uuid.UUID) -> None:
    """Share-lock the discipline of ``task_id`` (PostgreSQL) *before* the team is locked.

    (The endpoints take the same locks in the same order inside one statement:
    ``questline.progress.record.LOOKUP_PG``.)

    The global lock order is discipline, then teams (sorted), then completions: a
    discipline replaced or deleted with ``force`` holds its row ``FOR UPDATE`` while it
    locks the affected teams, so a completion must not hold its team while it waits for
    the discipline (the deadlock of the report). Holding the discipline first also means
    no completion of its tasks can appear while it is being replaced ("teams discovered
    late"). An unknown task locks nothing; ``find_task`` answers 404 afterwards.
    """
    await session.execute(
        select(Discipline.id)
        .join(Task, Task.discipline_id == Discipline.id)
        .where(Task.id == task_id)
        .with_for_update(key_share=True, of=Discipline)
    )


async def find_task(session: AsyncSession, *, org_id: uuid.UUID, task_id: uuid.UUID) -> TaskRef:
    """The task, when its discipline is visible to the organization; else 404."""
    row = (
        await session.execute(
            select(Task.id, Task.discipline_id, Task.points)
            .join(Discipline, Discipline.id == Task.discipline_id)
            .where(Task.id == task_id, visible_to(org_id))
        )
    ).one_or_none()
    if row is None:
        raise not_found("task")
    return TaskRef(id=row.id, discipline_id=row.discipline_id, points=row.points)


def check_completed_at(completed_at: dt.datetime | None, now: dt.datetime) -> dt.datetime:
    """The completion's time: now when not given; refused (422) beyond the clock skew."""
    if completed_at is None:
        return now
    if completed_at > now + CLOCK_SKEW:
        raise Unprocessable(
            "CompletedAt is in the future.",
            errors=[FieldError(field="CompletedAt", message="Must not be in the future.")],
        )
    return completed_at


async def get_completion(
    session: AsyncSession, *, team: Team, task_id: uuid.UUID
) -> TaskCompletion:
    completion = await session.scalar(
        select(TaskCompletion).where(
            TaskCompletion.organization_id == team.organization_id,
            TaskCompletion.team_id == team.id,
            TaskCompletion.task_id == task_id,
        )
    )
    if completion is None:
        raise not_found("completion of this task by this team")
    return completion


async def list_completions(session: AsyncSession, *, team: Team) -> Sequence[TaskCompletion]:
    """The team's completions, oldest first."""
    rows = await session.scalars(
        select(TaskCompletion)
        .where(
            TaskCompletion.organization_id == team.organization_id,
            TaskCompletion.team_id == team.id,
        )
        .order_by(TaskCompletion.completed_at, TaskCompletion.task_id)
    )
    return rows.all()


async def complete_task(
    session: AsyncSession, *, team: Team, data: schemas.ProgressCreate
) -> CompletionResult:
    """Record that the team completed the task; a repeat changes nothing.

    ``team`` must have been read with ``for_update=True``.
    """
    teams_service.ensure_active(team, "progress")
    task = await find_task(session, org_id=team.organization_id, task_id=data.task_id)
    now = utcnow()
    completed_at = check_completed_at(data.completed_at, now)
    inserted = await session.execute(
        insert_ignoring_conflicts(session, _completions, ["organization_id", "team_id", "task_id"])
        .values(
            organization_id=team.organization_id,
            team_id=team.id,
            task_id=task.id,
            discipline_id=task.discipline_id,
            points=task.points,
            completed_at=completed_at,
            created_at=now,
        )
        .returning(_completions.c.task_id)
    )
    created = inserted.scalar_one_or_none() is not None
    score = team.score
    if created:
        count_on_commit(session, TASKS_COMPLETED)
        [score] = await apply_steps(
            session,
            steps=[
                Step(
                    organization_id=team.organization_id,
                    team_id=team.id,
                    task_id=task.id,
                    discipline_id=task.discipline_id,
                    kind=ScoreChange.COMPLETED,
                    delta=task.points,
                    at=completed_at,
                )
            ],
        )
        await bump(session, team.organization_id)
    completion = await get_completion(session, team=team, task_id=task.id)
    if created:
        await events.record(
            session,
            organization_id=team.organization_id,
            type="progress.completed",
            data=to_schema(completion, score),
        )
    return CompletionResult(completion=completion, created=created, score=score)


def to_schema(completion: TaskCompletion, score: int | None = None) -> schemas.Completion:
    return schemas.Completion(
        team_id=completion.team_id,
        task_id=completion.task_id,
        discipline_id=completion.discipline_id,
        points=completion.points,
        completed_at=completion.completed_at,
        score=score,
    )

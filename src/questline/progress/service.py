"""Progress reads (completions), and completing a task through the ORM session the
demo loader holds. Every write goes through the ledger (``record``, ``ledger``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.progress import record, schemas
from questline.progress.ledger import Recorded
from questline.progress.models import TaskCompletion
from questline.teams.models import Team
from questline.web.errors import not_found


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
) -> Recorded:
    """Record that the team completed the task (``record.complete``: a repeat changes
    nothing), and give ``team`` — loaded in this session — its new score and version."""
    await session.flush()  # the ledger's statements run on the connection, past the ORM
    recorded = await record.complete(
        session, org_id=team.organization_id, team_id=team.id, data=data
    )
    await session.refresh(team)
    return recorded


def to_schema(completion: TaskCompletion, score: int | None = None) -> schemas.Completion:
    shown = schemas.Completion.model_validate(completion)
    return shown if score is None else shown.model_copy(update={"score": score})

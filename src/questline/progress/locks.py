"""Sequential disciplines: a level opens for a team once the team has completed every
task of the previous level. One rule, for every learner action (answers, self-check,
hints, submissions) and for the overview's ``Locked``."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines.checks import TaskCheck
from questline.disciplines.models import Level, Task
from questline.progress.models import TaskCompletion
from questline.web.errors import Locked


@dataclass(frozen=True, slots=True)
class LevelState:
    level_id: uuid.UUID
    title: str
    tasks: int
    completed: int


def open_levels(levels: Sequence[LevelState], *, sequential: bool) -> dict[uuid.UUID, bool]:
    """Whether each level is open: all of them in a discipline that is not sequential;
    else the first, and each whose previous level the team completed (an empty level
    counts as completed)."""
    opened: dict[uuid.UUID, bool] = {}
    previous: LevelState | None = None
    for level in levels:
        opened[level.level_id] = (
            not sequential or previous is None or previous.completed >= previous.tasks
        )
        previous = level
    return opened


async def level_states(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, discipline_id: uuid.UUID
) -> list[LevelState]:
    """The discipline's levels in order, each with its tasks and the team's completions."""
    done = (
        select(TaskCompletion.task_id)
        .where(
            TaskCompletion.organization_id == org_id,
            TaskCompletion.team_id == team_id,
            TaskCompletion.discipline_id == discipline_id,
        )
        .scalar_subquery()
    )
    rows = await session.execute(
        select(
            Level.id,
            Level.title,
            func.count(Task.id),
            func.count(Task.id).filter(Task.id.in_(done)),
        )
        .outerjoin(Task, Task.level_id == Level.id)
        .where(Level.discipline_id == discipline_id)
        .group_by(Level.id, Level.title, Level.position)
        .order_by(Level.position)
    )
    return [LevelState(row[0], row[1], int(row[2]), int(row[3])) for row in rows]


def closed_by(level_title: str, previous: LevelState | None) -> Locked | None:
    """The refusal (409 ``locked``, naming the level to finish first) of an action on a
    task of the level ``level_title`` of a sequential discipline, whose previous level
    is ``previous`` (None: the first level), or None when the level is open."""
    if previous is None or previous.completed >= previous.tasks:
        return None
    return Locked(
        f"The level {level_title!r} is locked: complete every task of the level "
        f"{previous.title!r} first ({previous.completed} of {previous.tasks} done)."
    )


async def ensure_open(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, task: TaskCheck
) -> None:
    """409 (``locked``) naming the level to finish first when the task's level is closed
    for the team."""
    if not task.sequential:
        return
    levels = await level_states(
        session, org_id=org_id, team_id=team_id, discipline_id=task.discipline_id
    )
    previous: LevelState | None = None
    for level in levels:
        if level.level_id == task.level_id:
            refused = closed_by(level.title, previous)
            if refused is not None:
                raise refused
            return
        previous = level

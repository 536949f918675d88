"""Discipline trees as ORM rows, and progress through the API.

Until the discipline endpoints exist, tests build trees directly with the tables of
``questline.disciplines.models``. ``shape`` lists levels, each a list of quests, each a
list of task points: ``[[[10, 20], [5]], [[1]]]`` is two levels, the first with two
quests (tasks of 10 and 20 points, and one of 5), the second with one task of 1.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from questline.disciplines.models import Color, Discipline, Level, Quest, Task
from questline.disciplines.service import bump_for
from questline.organizations.service import ensure_organization
from questline.storage import tenancy
from questline.storage.db import Database
from tests.factories import Org, unique

Shape = list[list[list[int]]]


@dataclass
class Tree:
    id: uuid.UUID
    title: str
    level_ids: list[uuid.UUID] = field(default_factory=list)
    quest_ids: list[list[uuid.UUID]] = field(default_factory=list)
    task_ids: list[list[list[uuid.UUID]]] = field(default_factory=list)
    points: dict[uuid.UUID, int] = field(default_factory=dict)

    @property
    def tasks(self) -> list[str]:
        """Every task id as a string, in tree order."""
        return [str(t) for level in self.task_ids for quest in level for t in quest]

    def task(self, level: int, quest: int, task: int) -> str:
        return str(self.task_ids[level][quest][task])


async def make_discipline(
    db: Database,
    *,
    org_id: uuid.UUID | None,
    shape: Shape,
    title: str | None = None,
    color: Color | None = Color.PURPLE,
) -> Tree:
    """A discipline of the organization (``None``: global) with the given tree."""
    tree = Tree(id=uuid.uuid4(), title=title or unique("Discipline"))
    # Row-level security (QUESTLINE_TEST_ROW_SECURITY): written as its organization.
    with tenancy.acting_for(org_id):
        return await _make(db, tree, org_id=org_id, shape=shape, color=color)


async def _make(
    db: Database, tree: Tree, *, org_id: uuid.UUID | None, shape: Shape, color: Color | None
) -> Tree:
    async with db.session() as session:
        if org_id is not None:
            await ensure_organization(session, org_id)
        session.add(
            Discipline(
                id=tree.id,
                organization_id=org_id,
                title=tree.title,
                description="A discipline made by a test.",
                color=color,
            )
        )
        await session.flush()
        for li, quests in enumerate(shape):
            level = Level(id=uuid.uuid4(), discipline_id=tree.id, position=li, title=f"L{li}")
            session.add(level)
            tree.level_ids.append(level.id)
            tree.quest_ids.append([])
            tree.task_ids.append([])
            for qi, tasks in enumerate(quests):
                quest = Quest(
                    id=uuid.uuid4(),
                    discipline_id=tree.id,
                    level_id=level.id,
                    position=qi,
                    title=f"Q{li}.{qi}",
                )
                session.add(quest)
                tree.quest_ids[li].append(quest.id)
                tree.task_ids[li].append([])
                for ti, points in enumerate(tasks):
                    task = Task(
                        id=uuid.uuid4(),
                        discipline_id=tree.id,
                        level_id=level.id,
                        quest_id=quest.id,
                        position=ti,
                        title=f"T{li}.{qi}.{ti}",
                        points=points,
                    )
                    session.add(task)
                    tree.task_ids[li][qi].append(task.id)
                    tree.points[task.id] = points
            await session.flush()
        await bump_for(session, org_id)  # a write like any other: the read model learns it
    return tree


def at(hours: float) -> str:
    """A past time, ``hours`` after a fixed origin a week ago (RFC 3339)."""
    return iso(ORIGIN + dt.timedelta(hours=hours))


def iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


ORIGIN = (dt.datetime.now(dt.UTC) - dt.timedelta(days=7)).replace(microsecond=0)


async def complete(
    org: Org, team_id: str, task_id: str, completed_at: str | None = None, **headers: str
) -> httpx.Response:
    body: dict[str, Any] = {"TaskId": task_id}
    if completed_at is not None:
        body["CompletedAt"] = completed_at
    return await org.client.post(
        f"/team/{team_id}/progress", json=body, headers={**org.admin, **headers}
    )


async def completed(org: Org, team_id: str, task_id: str, completed_at: str | None = None) -> int:
    """Complete the task (must be new); returns the team's score after it."""
    response = await complete(org, team_id, task_id, completed_at)
    assert response.status_code == 201, response.text
    return int(response.json()["Score"])


async def score_of(org: Org, team_id: str) -> int:
    response = await org.client.get(f"/team/{team_id}", headers=org.member)
    assert response.status_code == 200, response.text
    return int(response.json()["Score"])


@dataclass(frozen=True)
class HistoryRow:
    kind: str
    delta: int
    score_after: int
    task_id: str
    discipline_id: str
    at: dt.datetime


async def history(db: Database, team_id: str) -> list[HistoryRow]:
    """The team's score history, in the order it was recorded."""
    from sqlalchemy import select

    from questline.progress.models import ScoreEvent

    with tenancy.for_every_organization():  # the team's rows by its id (row security)
        async with db.session(write=False) as session:
            rows = await session.scalars(
                select(ScoreEvent)
                .where(ScoreEvent.team_id == uuid.UUID(team_id))
                .order_by(ScoreEvent.id)
            )
            return [
                HistoryRow(
                    kind=r.kind.value,
                    delta=r.delta,
                    score_after=r.score_after,
                    task_id=str(r.task_id),
                    discipline_id=str(r.discipline_id),
                    at=r.at,
                )
                for r in rows
            ]


async def backdate_team(db: Database, team_id: str, created_at: dt.datetime) -> None:
    """Pretend the team was created earlier (graphs start at the team's creation)."""
    from sqlalchemy import update

    from questline.storage import tenancy
    from questline.teams.models import Team

    # By the team's id, whichever organization it is in (row-level security).
    with tenancy.for_every_organization():
        async with db.session() as session:
            changed = await session.execute(
                update(Team)
                .where(Team.id == uuid.UUID(team_id))
                .values(created_at=created_at, score_reached_at=created_at)
            )
    assert changed.rowcount == 1  # type: ignore[attr-defined]

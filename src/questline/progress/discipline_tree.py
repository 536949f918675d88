"""The disciplines an organization sees, as the overview shows them: levels, quests and
tasks with each quest's task and point totals. The same for every team of the
organization, so the read model keeps it once per version (``shared_tree``) and builds
each team's overview on it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines.models import Discipline, Level, Quest, Task
from questline.disciplines.service import DOCUMENTS, visible_to, visible_versions
from questline.readmodel.service import ReadModel


@dataclass(frozen=True, slots=True)
class TaskNode:
    id: uuid.UUID
    title: str
    position: int
    points: int
    kind: str
    max_attempts: int | None


@dataclass(frozen=True, slots=True)
class QuestNode:
    id: uuid.UUID
    title: str
    position: int
    tasks: int
    points: int
    items: tuple[TaskNode, ...] = ()


@dataclass(frozen=True, slots=True)
class LevelNode:
    id: uuid.UUID
    title: str
    position: int
    quests: list[QuestNode]


@dataclass(frozen=True, slots=True)
class DisciplineNode:
    id: uuid.UUID
    title: str
    color: str | None
    levels: list[LevelNode]
    sequential: bool = False


async def visible_tree(session: AsyncSession, *, org_id: uuid.UUID) -> list[DisciplineNode]:
    """Every discipline the organization sees, with its levels and quests and each
    quest's task and point totals (the same for every team: memoized per version)."""
    visible_ids = select(Discipline.id).where(visible_to(org_id))
    disciplines = (
        await session.execute(
            select(Discipline.id, Discipline.title, Discipline.color, Discipline.sequential)
            .where(visible_to(org_id))
            .order_by(Discipline.title, Discipline.id)
        )
    ).all()
    levels = (
        await session.execute(
            select(Level.id, Level.discipline_id, Level.position, Level.title)
            .where(Level.discipline_id.in_(visible_ids))
            .order_by(Level.discipline_id, Level.position, Level.id)
        )
    ).all()
    quests = (
        await session.execute(
            select(
                Quest.id,
                Quest.level_id,
                Quest.position,
                Quest.title,
                func.count(Task.id),
                func.coalesce(func.sum(Task.points), 0),
            )
            .outerjoin(Task, Task.quest_id == Quest.id)
            .where(Quest.discipline_id.in_(visible_ids))
            .group_by(Quest.id, Quest.level_id, Quest.position, Quest.title)
            .order_by(Quest.level_id, Quest.position, Quest.id)
        )
    ).all()
    tasks = (
        await session.execute(
            select(
                Task.id,
                Task.quest_id,
                Task.position,
                Task.title,
                Task.points,
                Task.check_kind,
                Task.max_attempts,
            )
            .where(Task.discipline_id.in_(visible_ids))
            .order_by(Task.quest_id, Task.position)
        )
    ).all()
    tasks_of: dict[uuid.UUID, list[TaskNode]] = defaultdict(list)
    for t in tasks:
        kind = t[5].value if hasattr(t[5], "value") else str(t[5])
        tasks_of[t[1]].append(TaskNode(t[0], t[3], t[2], int(t[4]), kind, t[6]))
    quests_of: dict[uuid.UUID, list[QuestNode]] = defaultdict(list)
    for q in quests:
        quests_of[q[1]].append(
            QuestNode(q[0], q[3], q[2], int(q[4]), int(q[5]), tuple(tasks_of.get(q[0], ())))
        )
    levels_of: dict[uuid.UUID, list[LevelNode]] = defaultdict(list)
    for lv in levels:
        levels_of[lv[1]].append(LevelNode(lv[0], lv[3], lv[2], quests_of.get(lv[0], [])))
    return [
        DisciplineNode(
            d[0], d[1], d[2].value if d[2] else None, levels_of.get(d[0], []), bool(d[3])
        )
        for d in disciplines
    ]


async def shared_tree(
    session: AsyncSession, memos: ReadModel, *, org_id: uuid.UUID
) -> list[DisciplineNode]:
    """``visible_tree``, kept once for every organization that sees the same disciplines
    at the same versions (all those with only the global ones): one small statement
    (``visible_versions``) instead of the tree's three when another organization, or
    this one at an earlier version, already built it."""
    seen = await visible_versions(session, org_id=org_id)
    name = "tree:" + hashlib.blake2b(repr(seen).encode(), digest_size=16).hexdigest()

    async def build() -> list[DisciplineNode]:
        return await visible_tree(session, org_id=org_id)

    tree: list[DisciplineNode] = await memos.memo(DOCUMENTS, name, 0, build)
    return tree

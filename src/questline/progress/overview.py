"""A team's overview: its progress through every discipline its organization sees.

The counts are aggregated in SQL (one GROUP BY over quests ⟕ tasks ⟕ the team's
completions), so the overview costs the same few statements whatever the number of
disciplines, levels, quests and tasks.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Row, Select, and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines.models import Discipline, Level, Quest, Task
from questline.disciplines.service import visible_to
from questline.leaderboard import service as leaderboard
from questline.progress import schemas
from questline.progress.models import ScoreEvent, TaskCompletion
from questline.teams import service as teams_service
from questline.teams.models import Team
from questline.web.errors import not_found


@dataclass(frozen=True, slots=True)
class _Tally:
    tasks_completed: int = 0
    tasks_total: int = 0
    points_earned: int = 0
    points_total: int = 0

    def __add__(self, other: _Tally) -> _Tally:
        return _Tally(
            self.tasks_completed + other.tasks_completed,
            self.tasks_total + other.tasks_total,
            self.points_earned + other.points_earned,
            self.points_total + other.points_total,
        )

    @property
    def complete(self) -> bool:
        return self.tasks_completed >= self.tasks_total

    def fields(self) -> dict[str, int]:
        percent = 100 * self.tasks_completed // self.tasks_total if self.tasks_total else 0
        return {
            "tasks_completed": self.tasks_completed,
            "tasks_total": self.tasks_total,
            "points_earned": self.points_earned,
            "points_total": self.points_total,
            "percent": percent,
        }


def _sum(tallies: Iterable[_Tally]) -> _Tally:
    total = _Tally()
    for tally in tallies:
        total += tally
    return total


async def team_overview(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID
) -> schemas.Overview:
    row = (
        await session.execute(
            select(Team, teams_service.member_count_column()).where(
                Team.organization_id == org_id, Team.id == team_id
            )
        )
    ).one_or_none()
    if row is None:
        raise not_found("team")
    team, member_count = row[0], int(row[1])
    rank = await leaderboard.rank_of(session, team=team)
    tasks_completed, last_activity = (
        await session.execute(
            select(
                select(func.count())
                .where(TaskCompletion.organization_id == org_id, TaskCompletion.team_id == team_id)
                .scalar_subquery(),
                select(func.max(ScoreEvent.at))
                .where(ScoreEvent.organization_id == org_id, ScoreEvent.team_id == team_id)
                .scalar_subquery(),
            )
        )
    ).one()
    return schemas.Overview(
        team_id=team.id,
        name=team.name,
        status=team.status,
        is_admin_team=team.is_admin_team,
        is_survey_completed=team.is_survey_completed,
        score=team.score,
        rank=rank,
        member_count=member_count,
        tasks_completed=int(tasks_completed),
        last_activity_at=last_activity,
        disciplines=await _disciplines(session, org_id=org_id, team_id=team_id),
    )


async def _disciplines(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID
) -> list[schemas.DisciplineProgress]:
    visible_ids = select(Discipline.id).where(visible_to(org_id))
    disciplines = (
        await session.execute(
            select(Discipline.id, Discipline.title, Discipline.color)
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
    quests = await _quest_tallies(session, org_id=org_id, team_id=team_id, visible_ids=visible_ids)

    quests_of: dict[uuid.UUID, list[tuple[schemas.QuestProgress, _Tally]]] = defaultdict(list)
    for quest in quests:
        tally = _Tally(quest.done, quest.total, quest.earned, quest.points)
        quest_item = schemas.QuestProgress(
            quest_id=quest.id, title=quest.title, order=quest.position, **tally.fields()
        )
        quests_of[quest.level_id].append((quest_item, tally))
    levels_of: dict[uuid.UUID, list[tuple[schemas.LevelProgress, _Tally]]] = defaultdict(list)
    for level in levels:
        children = quests_of.get(level.id, [])
        tally = _sum(t for _, t in children)
        level_item = schemas.LevelProgress(
            level_id=level.id,
            title=level.title,
            order=level.position,
            quests=[q for q, _ in children],
            **tally.fields(),
        )
        levels_of[level.discipline_id].append((level_item, tally))
    result = []
    for discipline in disciplines:
        children_levels = levels_of.get(discipline.id, [])
        tally = _sum(t for _, t in children_levels)
        current = next((lv.level_id for lv, t in children_levels if not t.complete), None)
        result.append(
            schemas.DisciplineProgress(
                discipline_id=discipline.id,
                title=discipline.title,
                color=discipline.color.value if discipline.color else None,
                current_level_id=current,
                levels=[lv for lv, _ in children_levels],
                **tally.fields(),
            )
        )
    return result


async def _quest_tallies(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    visible_ids: Select[uuid.UUID],
) -> Sequence[Row[uuid.UUID, uuid.UUID, int, str, int, int, int, int]]:
    """Per quest: its tasks and points, and those the team completed."""
    done = TaskCompletion
    query = (
        select(
            Quest.id,
            Quest.level_id,
            Quest.position,
            Quest.title,
            func.count(Task.id).label("total"),
            func.coalesce(func.sum(Task.points), 0).label("points"),
            func.count(done.task_id).label("done"),
            func.coalesce(func.sum(done.points), 0).label("earned"),
        )
        .outerjoin(Task, Task.quest_id == Quest.id)
        .outerjoin(
            done,
            and_(
                done.organization_id == org_id,
                done.team_id == team_id,
                done.task_id == Task.id,
            ),
        )
        .where(Quest.discipline_id.in_(visible_ids))
        .group_by(Quest.id, Quest.level_id, Quest.position, Quest.title)
        .order_by(Quest.level_id, Quest.position, Quest.id)
    )
    return (await session.execute(query)).all()

"""A team's overview: its progress through every discipline its organization sees.

The counts are aggregated in SQL (one GROUP BY over quests ⟕ tasks ⟕ the team's
completions), so the overview costs the same few statements whatever the number of
disciplines, levels, quests and tasks.
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, Select, and_, bindparam, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from questline.disciplines.models import Discipline, Level, Quest, Task
from questline.disciplines.service import visible_to
from questline.leaderboard import service as leaderboard
from questline.progress import schemas
from questline.progress.models import ScoreEvent, TaskCompletion
from questline.teams import service as teams_service
from questline.teams.models import Team, TeamStatus
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


# -- The read model's build: two statements a team, the tree once per organization version --


@dataclass(frozen=True, slots=True)
class QuestNode:
    id: uuid.UUID
    title: str
    position: int
    tasks: int
    points: int


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


async def visible_tree(session: AsyncSession, *, org_id: uuid.UUID) -> list[DisciplineNode]:
    """Every discipline the organization sees, with its levels and quests and each
    quest's task and point totals (the same for every team: memoized per version)."""
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
    quests_of: dict[uuid.UUID, list[QuestNode]] = defaultdict(list)
    for q in quests:
        quests_of[q[1]].append(QuestNode(q[0], q[3], q[2], int(q[4]), int(q[5])))
    levels_of: dict[uuid.UUID, list[LevelNode]] = defaultdict(list)
    for lv in levels:
        levels_of[lv[1]].append(LevelNode(lv[0], lv[3], lv[2], quests_of.get(lv[0], [])))
    return [
        DisciplineNode(d[0], d[1], d[2].value if d[2] else None, levels_of.get(d[0], []))
        for d in disciplines
    ]


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

    same_score = ahead.score == Team.score
    return (
        count(ahead.score > Team.score)
        + count(same_score, ahead.score_reached_at < Team.score_reached_at)
        + count(
            same_score,
            ahead.score_reached_at == Team.score_reached_at,
            ahead.name_key < Team.name_key,
        )
    )


def _counts(done: int, total: int, earned: int, points: int) -> dict[str, int]:
    return {
        "TasksCompleted": done,
        "TasksTotal": total,
        "PointsEarned": earned,
        "PointsTotal": points,
        "Percent": 100 * done // total if total else 0,
    }


async def overview_json(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, tree: list[DisciplineNode]
) -> dict[str, Any]:
    """A ``schemas.Overview`` as its JSON object, in two statements (tests check the
    two agree)."""
    team_query, quests_query = _overview_queries()
    params = {"org": org_id, "team": team_id}
    row = (await session.execute(team_query, params)).one_or_none()
    if row is None:
        raise not_found("team")
    per_quest = {
        quest_id: (int(count), int(points))
        for quest_id, count, points in (await session.execute(quests_query, params)).all()
    }
    return _assemble(row, per_quest, tree)


@functools.cache
def _overview_queries() -> tuple[Any, Any]:
    """Built once: composing a statement costs more CPU than running it (profiled)."""
    org: Any = bindparam("org")
    team: Any = bindparam("team")
    last_activity = (
        select(func.max(ScoreEvent.at))
        .where(ScoreEvent.organization_id == Team.organization_id, ScoreEvent.team_id == Team.id)
        .correlate(Team)
        .scalar_subquery()
    )
    team_query = select(
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
        _rank_expression(),
    ).where(Team.organization_id == org, Team.id == team)
    done = TaskCompletion
    quests_query = (
        select(Task.quest_id, func.count(), func.sum(done.points))
        .select_from(done)
        .join(Task, Task.id == done.task_id)
        .where(done.organization_id == org, done.team_id == team)
        .group_by(Task.quest_id)
    )
    return team_query, quests_query


def _assemble(
    row: Any, per_quest: dict[uuid.UUID, tuple[int, int]], tree: list[DisciplineNode]
) -> dict[str, Any]:
    disciplines = []
    for discipline in tree:
        levels = []
        d_totals = [0, 0, 0, 0]
        current = None
        for level in discipline.levels:
            quests = []
            l_totals = [0, 0, 0, 0]
            for quest in level.quests:
                q_done, q_earned = per_quest.get(quest.id, (0, 0))
                quests.append(
                    {
                        **_counts(q_done, quest.tasks, q_earned, quest.points),
                        "QuestId": quest.id,
                        "Title": quest.title,
                        "Order": quest.position,
                    }
                )
                for i, value in enumerate((q_done, quest.tasks, q_earned, quest.points)):
                    l_totals[i] += value
            if current is None and l_totals[0] < l_totals[1]:
                current = level.id
            levels.append(
                {
                    **_counts(*l_totals),
                    "LevelId": level.id,
                    "Title": level.title,
                    "Order": level.position,
                    "Quests": quests,
                }
            )
            for i in range(4):
                d_totals[i] += l_totals[i]
        disciplines.append(
            {
                **_counts(*d_totals),
                "DisciplineId": discipline.id,
                "Title": discipline.title,
                "Color": discipline.color,
                "CurrentLevelId": current,
                "Levels": levels,
            }
        )
    status = row[2]
    return {
        "TeamId": row[0],
        "Name": row[1],
        "Status": status.value if isinstance(status, TeamStatus) else status,
        "IsAdminTeam": row[3],
        "IsSurveyCompleted": row[4],
        "Score": row[5],
        "Rank": int(row[10]) + 1 if row[6] else None,
        "MemberCount": int(row[8]),
        "TasksCompleted": int(row[7]),
        "LastActivityAt": _utc(row[9]),
        "Disciplines": disciplines,
    }


def _utc(value: Any) -> Any:
    """``max(at)`` comes back as text on SQLite (an aggregate loses the column type)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)

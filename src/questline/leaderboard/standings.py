"""The current standings: the teams of an organization that are neither admin nor
archived, by score overall or by points in a discipline, and a team's rank.

The overall ranking reads the team rows in the order of the index
``ix_teams_leaderboard`` — ``organization_id =, is_ranked = true, score DESC,
score_reached_at, name_key`` — so a page costs an index range scan, not a sort of
the organization's teams. The per-discipline ranking aggregates the completions in
that discipline (there is no stored per-discipline score to index).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, ScalarSelect, Select, and_, bindparam, case, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines.models import Discipline
from questline.disciplines.service import visible_to
from questline.progress.models import TaskCompletion
from questline.teams.models import Team
from questline.teams.ranking import ranking_order
from questline.web.errors import not_found

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class Entry:
    rank: int
    team_id: uuid.UUID
    name: str
    score: int
    tasks_completed: int
    reached_at: dt.datetime | None
    member_count: int | None = None
    """The team's members, when the ranking is per member (``by=perMember``)."""

    @property
    def points_per_member(self) -> float | None:
        """``Score`` divided by the member count (at least 1), when ranked per member."""
        if self.member_count is None:
            return None
        return round(self.score / max(1, self.member_count), 4)


def _tasks_completed(discipline_id: uuid.UUID | None = None) -> ScalarSelect[int]:
    query = select(func.count()).where(
        TaskCompletion.organization_id == Team.organization_id,
        TaskCompletion.team_id == Team.id,
    )
    if discipline_id is not None:
        query = query.where(TaskCompletion.discipline_id == discipline_id)
    return query.correlate(Team).scalar_subquery()


def overall_query(
    org_id: uuid.UUID | Any, *, limit: int | Any, offset: int | Any
) -> Select[uuid.UUID, str, int, int, dt.datetime]:
    """The exact statement of ``GET /leaderboard`` (the index test EXPLAINs it); values
    or bound parameters (``overall_statement``)."""
    return (
        select(
            Team.id,
            Team.name,
            Team.score,
            Team.tasks_completed,  # kept on the row: no count per ranked team
            Team.score_reached_at,
        )
        .where(Team.organization_id == org_id, Team.is_ranked == true())
        .order_by(*ranking_order(Team.score, Team.score_reached_at, Team.name_key))
        .limit(limit)
        .offset(offset)
    )


def overall_statement() -> Select[uuid.UUID, str, int, int, dt.datetime]:
    """``overall_query`` with bound parameters ``org``, ``limit`` and ``offset``: the read
    model's lean miss runs it (compiled once, ``LeanReader.statement``)."""
    return overall_query(
        bindparam("org"),
        limit=bindparam("limit", type_=Integer),
        offset=bindparam("offset", type_=Integer),
    )


def discipline_query(
    org_id: uuid.UUID, discipline_id: uuid.UUID, *, limit: int, offset: int
) -> Select[uuid.UUID, str, int, int, dt.datetime | None]:
    """Ranked teams by points earned in one discipline; teams with none come last."""
    done = TaskCompletion
    points = func.coalesce(func.sum(done.points), 0)
    reached = case((points > 0, func.max(done.completed_at)), else_=None)
    return (
        select(Team.id, Team.name, points, func.count(done.task_id), reached)
        .outerjoin(
            done,
            and_(
                done.organization_id == Team.organization_id,
                done.team_id == Team.id,
                done.discipline_id == discipline_id,
            ),
        )
        .where(Team.organization_id == org_id, Team.is_ranked == true())
        .group_by(Team.id, Team.name, Team.name_key)
        .order_by(*ranking_order(points, reached, Team.name_key, reached_may_be_null=True))
        .limit(limit)
        .offset(offset)
    )


async def ensure_discipline_visible(
    session: AsyncSession, *, org_id: uuid.UUID, discipline_id: uuid.UUID
) -> None:
    found = await session.scalar(
        select(Discipline.id).where(Discipline.id == discipline_id, visible_to(org_id))
    )
    if found is None:
        raise not_found("discipline")


async def ranking(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    limit: int = DEFAULT_LIMIT,
    offset: int = 0,
    discipline_id: uuid.UUID | None = None,
) -> list[Entry]:
    query: Select[uuid.UUID, str, int, int, dt.datetime | None]
    if discipline_id is None:
        query = overall_query(org_id, limit=limit, offset=offset)
    else:
        await ensure_discipline_visible(session, org_id=org_id, discipline_id=discipline_id)
        query = discipline_query(org_id, discipline_id, limit=limit, offset=offset)
    return entries_from_rows((await session.execute(query)).all(), offset=offset)


def entries_from_rows(rows: Sequence[Sequence[Any]], *, offset: int) -> list[Entry]:
    """Ranked rows ``(team_id, name, score, tasks_completed, reached_at)`` as entries,
    ranked from ``offset + 1``."""
    return [
        Entry(
            rank=offset + index + 1,
            team_id=row[0],
            name=row[1],
            score=int(row[2]),
            tasks_completed=int(row[3]),
            reached_at=as_utc(row[4]),
        )
        for index, row in enumerate(rows)
    ]


def as_utc(value: object) -> dt.datetime | None:
    """A timestamp from an aggregate (SQLite hands back text, without the column type)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    assert isinstance(value, dt.datetime)
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


async def rank_of(session: AsyncSession, *, team: Team) -> int | None:
    """The team's overall leaderboard position, or None when it is not ranked.

    The teams ahead are counted as three ranges of ``ix_teams_leaderboard`` (higher
    score; same score reached earlier; same score and time, name first), each a tight
    index-only range. One ``OR`` of the three makes SQLite merge row sets and
    PostgreSQL filter the whole organization (docs/performance.md, "Figures behind the
    code").
    """
    if not team.is_ranked:
        return None
    ranked = (Team.organization_id == team.organization_id, Team.is_ranked == true())
    same_score = Team.score == team.score
    same_time = Team.score_reached_at == team.score_reached_at
    ranges = [
        (Team.score > team.score,),
        (same_score, Team.score_reached_at < team.score_reached_at),
        (same_score, same_time, Team.name_key < team.name_key),
    ]
    counts = [select(func.count()).where(*ranked, *bounds).scalar_subquery() for bounds in ranges]
    ahead = await session.scalar(select(counts[0] + counts[1] + counts[2]))
    return int(ahead or 0) + 1

"""Progress graphs: each team's cumulative score over time, as a step function.

A series starts at 0 at the team's creation (or at its earliest change, when a
completion was recorded with an earlier ``CompletedAt``). With ``from``, it starts at
``from`` with the cumulative score just before it. Then there is one point per change
inside the window, its value the running sum of the changes in time order. Only the
history of the teams drawn is read (index ``ix_score_events_team_at``).
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import ARRAY, DateTime, and_, bindparam, func, select, true
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from questline.leaderboard import standings
from questline.progress.models import ScoreEvent
from questline.teams.models import Team
from questline.web.errors import FieldError, Unprocessable


@dataclass(frozen=True, slots=True)
class Window:
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    discipline_id: uuid.UUID | None = None
    before: dt.datetime | None = None
    """Exclusive end (a season's ``EndsAt``)."""
    as_of: dt.datetime | None = None
    """Only the changes recorded before this instant (a season's frozen view)."""
    from_zero: bool = False
    """Count nothing before ``start``: the series starts at 0 (a season's own score)."""

    def check(self) -> None:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise Unprocessable(
                "'from' is after 'to'.",
                errors=[FieldError(field="from", message="Must not be after 'to'.")],
            )


class Point(NamedTuple):
    """(A tuple: a graph makes one a change, and a frozen dataclass costs several times
    more to make; docs/performance.md, "Cold graph".)"""

    at: dt.datetime
    score: int


@dataclass(frozen=True, slots=True)
class Series:
    team_id: uuid.UUID
    name: str
    points: list[Point]


Change = tuple[dt.datetime, int]
"""When a team's score changed and by how much (a plain tuple: a graph reads one an event,
made in C by ``zip``)."""


def step_series(created_at: dt.datetime, changes: Sequence[Change], window: Window) -> list[Point]:
    """The points of one team's step function (``changes`` in time order)."""
    origin = min(created_at, changes[0][0]) if changes else created_at
    if window.end is not None and window.end < origin:
        return []
    first_at, running = origin, 0
    if window.start is not None and window.start > origin:
        first_at = window.start
        running = sum(delta for at, delta in changes if at < first_at)  # the starting value
        changes = [change for change in changes if change[0] >= first_at]
    points = [Point(first_at, running)]
    for at, delta in changes:
        running += delta
        points.append(Point(at, running))
    return points


@dataclass(frozen=True, slots=True)
class _History:
    created_at: dt.datetime
    changes: list[Change]


HISTORY_ORDER = (ScoreEvent.at, ScoreEvent.id)
"""A team's changes in time order (ties: recorded order)."""


def _history_conditions(org_id: uuid.UUID | Any, window: Window) -> list[Any]:
    """Which of a team's (``Team``) score events the window draws."""
    joined = [ScoreEvent.team_id == Team.id, ScoreEvent.organization_id == org_id]
    if window.discipline_id is not None:
        joined.append(ScoreEvent.discipline_id == window.discipline_id)
    if window.end is not None:
        joined.append(ScoreEvent.at <= window.end)
    if window.before is not None:
        joined.append(ScoreEvent.at < window.before)
    if window.as_of is not None:
        joined.append(ScoreEvent.recorded_at < window.as_of)
    if window.from_zero and window.start is not None:
        joined.append(ScoreEvent.at >= window.start)
    return joined


def histories_query(org_id: uuid.UUID | Any, team_ids: Sequence[Any], window: Window) -> Any:
    """Each of ``team_ids``' creation and its changes in the window (time order): the
    teams joined to their events, so that a team without any still has its row. Values
    or bound parameters (``plain_histories_statement``)."""
    return (
        select(Team.id, Team.created_at, ScoreEvent.at, ScoreEvent.delta)
        .select_from(Team)
        .outerjoin(ScoreEvent, and_(*_history_conditions(org_id, window)))
        .where(Team.organization_id == org_id, Team.id.in_(team_ids))
        .order_by(Team.id, *HISTORY_ORDER)
    )


@functools.cache
def plain_histories_statement(teams: int) -> Any:
    """``histories_query`` of ``teams`` teams over the whole history, with bound
    parameters ``org`` and ``team0`` … (the read model's lean miss runs it on SQLite,
    compiled once a count: ``top`` is at most 50)."""
    team_ids = [bindparam(f"team{i}", type_=Team.id.type) for i in range(teams)]
    return histories_query(bindparam("org"), team_ids, Window())


@functools.cache
def ranked_histories_statement() -> Any:
    """PostgreSQL, in one statement: ``standings.overall_statement`` (bound ``org``,
    ``limit``, ``offset``: the leaderboard's own ranking, order and limit), each ranked
    team's creation, and its whole history (``histories_query``'s events and order) as
    two arrays, times and deltas (``histories_from_arrays``). The lean miss of ``GET
    /leaderboard/graph`` runs it: one round trip and one row a team, where the ranking
    then the histories were two round trips and a row an event (docs/performance.md)."""
    ranked = standings.overall_statement()
    events = (
        select(
            func.array_agg(
                aggregate_order_by(ScoreEvent.at, *HISTORY_ORDER),
                type_=ARRAY(DateTime(timezone=True)),  # asyncpg's: UTC, nothing to convert
            ).label("ats"),
            func.array_agg(aggregate_order_by(ScoreEvent.delta, *HISTORY_ORDER)).label("deltas"),
        )
        .where(*_history_conditions(Team.organization_id, Window()))
        .lateral("history")
    )
    return ranked.add_columns(Team.created_at, events.c.ats, events.c.deltas).outerjoin(
        events, true()
    )


def histories_from_arrays(rows: Sequence[Sequence[Any]]) -> dict[uuid.UUID, _History]:
    """``ranked_histories_statement``'s rows (the ranking's five columns, then the
    creation and the two arrays) as histories."""
    return {
        row[0]: _History(
            row[5],
            list(zip(row[6] or (), row[7] or (), strict=True)),
        )
        for row in rows
    }


def histories_from_rows(rows: Sequence[Sequence[Any]]) -> dict[uuid.UUID, _History]:
    found: dict[uuid.UUID, _History] = {}
    for team_id, created_at, at, delta in rows:
        history = found.get(team_id)
        if history is None:
            history = found[team_id] = _History(created_at, [])
        if at is not None:
            history.changes.append((at, delta))
    return found


async def _histories(
    session: AsyncSession, *, org_id: uuid.UUID, team_ids: Sequence[uuid.UUID], window: Window
) -> dict[uuid.UUID, _History]:
    """``histories_query``'s teams, in one query."""
    query = histories_query(org_id, team_ids, window)
    return histories_from_rows((await session.execute(query)).all())


async def team_series(session: AsyncSession, *, team: Team, window: Window) -> Series:
    """One team's series, whatever its status (admin teams have a graph of their own)."""
    window.check()
    if window.discipline_id is not None:
        await standings.ensure_discipline_visible(
            session, org_id=team.organization_id, discipline_id=window.discipline_id
        )
    found = await _histories(
        session, org_id=team.organization_id, team_ids=[team.id], window=window
    )
    changes = found[team.id].changes if team.id in found else []
    return Series(team.id, team.name, step_series(team.created_at, changes, window))


async def top_series(
    session: AsyncSession, *, org_id: uuid.UUID, top: int, window: Window
) -> list[Series]:
    """The series of the leaderboard's first ``top`` teams, in rank order."""
    window.check()
    entries = await standings.ranking(
        session, org_id=org_id, limit=top, discipline_id=window.discipline_id
    )
    return await series_of(session, org_id=org_id, entries=entries, window=window)


async def series_of(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    entries: Sequence[standings.Entry],
    window: Window,
) -> list[Series]:
    """The series of the ranked ``entries``, in their order."""
    ids = [e.team_id for e in entries]
    if not ids:
        return []
    found = await _histories(session, org_id=org_id, team_ids=ids, window=window)
    return series_from(entries, found, window)


def series_from(
    entries: Sequence[standings.Entry], found: dict[uuid.UUID, _History], window: Window
) -> list[Series]:
    """The ranked ``entries``' series from their histories, in their order."""
    return [
        Series(
            e.team_id,
            e.name,
            step_series(found[e.team_id].created_at, found[e.team_id].changes, window),
        )
        for e in entries
    ]

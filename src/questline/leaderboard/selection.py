"""The ranking a request selects besides the current standings (``standings``).

* **Windowed** (``from``/``to``): teams ranked by the points of their completions whose
  ``CompletedAt`` lies in the window, and of their adjustments whose ``At`` does (both
  ends inclusive, either may be open; ``counted``). A withdrawn completion or
  adjustment never counts. Ties: the earlier time the team reached its window score
  (its last counted change that moved it), then the name; teams with nothing in the
  window follow, by name. Combinable with ``discipline`` (which counts no adjustment).
* **Around a team** (``around``): the ``limit`` ranked entries centred on that team
  (``(limit-1)//2`` before it, the rest after; fewer at the edges), with their true
  ranks, in whichever ranking the other parameters select.

The overall ranking is in ``standings`` (an index range scan); these aggregate the
organization's completions, as the per-discipline ranking does.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

from sqlalchemy import Select, case, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from questline.leaderboard import standings
from questline.leaderboard.counted import counted_changes
from questline.leaderboard.standings import Entry
from questline.teams import service as teams_service
from questline.teams.models import Team
from questline.web.errors import FieldError, Unprocessable

EVERY = 2**31 - 1
"""A limit that is no limit (every ranked team)."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which ranking: the window and discipline (all ``None``: the overall one)."""

    start: dt.datetime | None = None
    end: dt.datetime | None = None
    discipline_id: uuid.UUID | None = None

    @property
    def windowed(self) -> bool:
        return self.start is not None or self.end is not None

    def check(self) -> None:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise Unprocessable(
                "'from' is after 'to'.",
                errors=[FieldError(field="from", message="Must not be after 'to'.")],
            )


def window_query(
    org_id: uuid.UUID, selection: Selection, *, limit: int | None, offset: int
) -> Select[uuid.UUID, str, int, int, dt.datetime | None]:
    """Ranked teams by the points of their standing changes inside the window
    (completions and adjustments: ``counted.counted_changes``)."""
    counted = counted_changes(
        org_id,
        start=selection.start,
        end=selection.end,
        discipline_id=selection.discipline_id,
    )
    points = func.coalesce(func.sum(counted.c.points), 0)
    tasks = func.coalesce(func.sum(counted.c.tasks), 0)
    # The time the window score was reached: the last counted change that moved it.
    reached = func.max(case((counted.c.points != 0, counted.c.at), else_=None))
    query = (
        select(Team.id, Team.name, points, tasks, reached)
        .outerjoin(counted, counted.c.team_id == Team.id)
        .where(Team.organization_id == org_id, Team.is_ranked == true())
        .group_by(Team.id, Team.name, Team.name_key)
        .order_by(points.desc(), reached.asc().nulls_last(), Team.name_key)
        .offset(offset)
    )
    return query if limit is None else query.limit(limit)


async def ranking(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    selection: Selection,
    limit: int | None,
    offset: int = 0,
) -> list[Entry]:
    """A page of the selected ranking (``limit=None``: every ranked team)."""
    selection.check()
    if not selection.windowed:
        return await standings.ranking(
            session,
            org_id=org_id,
            limit=EVERY if limit is None else limit,
            offset=offset,
            discipline_id=selection.discipline_id,
        )
    if selection.discipline_id is not None:
        await standings.ensure_discipline_visible(
            session, org_id=org_id, discipline_id=selection.discipline_id
        )
    rows = (
        await session.execute(window_query(org_id, selection, limit=limit, offset=offset))
    ).all()
    return standings.entries_from_rows(rows, offset=offset)


def centred(rank: int, limit: int) -> tuple[int, int]:
    """``(offset, count)`` of the ``limit`` entries centred on ``rank`` (1-based)."""
    first = max(1, rank - (limit - 1) // 2)
    last = rank + (limit - 1 - (limit - 1) // 2)
    return first - 1, last - first + 1


async def around(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    selection: Selection,
    limit: int,
) -> list[Entry]:
    """The ``limit`` entries centred on the team; 404 for a team outside the
    organization, 422 for one that is not ranked (admin or archived)."""
    selection.check()
    team = await teams_service.get_team(session, org_id=org_id, team_id=team_id)
    if not team.is_ranked:
        reason = "an admin team" if team.is_admin_team else "archived"
        raise Unprocessable(
            f"The team is {reason}, so it is not on the leaderboard.",
            errors=[FieldError(field="around", message="Name a ranked team.")],
        )
    if not selection.windowed and selection.discipline_id is None:
        rank = await standings.rank_of(session, team=team)
        assert rank is not None
        offset, count = centred(rank, limit)
        return await ranking(
            session, org_id=org_id, selection=selection, limit=count, offset=offset
        )
    everyone = await ranking(session, org_id=org_id, selection=selection, limit=None)
    rank = next(e.rank for e in everyone if e.team_id == team.id)
    offset, count = centred(rank, limit)
    return everyone[offset : offset + count]

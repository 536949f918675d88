"""The ranking a request selects besides the plain current standings (``standings``).

* **Windowed** (``from``/``to``, or a season's ``[StartsAt, EndsAt)``): teams ranked by
  the points of the items that count in the window — ``questline.progress.counted``,
  the one source of every windowed ranking (completions; whatever else registers
  there, such as point adjustments, counts the same way). Ties: the earlier time the
  team reached its window score (its last counted item that changed it), then the name;
  teams with nothing in the window follow, by name. With ``as_of`` (a season's frozen
  view): only what was recorded before that instant.
* **Bracket** (``tag``): only the teams carrying that tag (compared ignoring case),
  ranked 1, 2, 3 … among themselves.
* **Per member** (``per_member``): by points divided by the team's member count (at
  least 1), compared exactly (as fractions); ties as above.
* **Around a team** (``around``): the ``limit`` ranked entries centred on that team
  (``(limit-1)//2`` before it, the rest after; fewer at the edges), with their true
  ranks, in whichever ranking the other parameters select.

The plain overall ranking is in ``standings`` (an index range scan), and so is the plain
per-discipline one. Everything else aggregates once per read-model version — the
organization's ranked teams and the window's totals per team — and is ranked here, in
Python, from those two: a page, a bracket, ``around`` and the per-member order of the
same version share them (``Memo``). The totals of a frozen view never change once the
freeze has begun (history is append-only): they are kept across versions.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from sqlalchemy import case, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from questline.leaderboard import standings
from questline.leaderboard.standings import Entry, as_utc
from questline.members.models import TeamMembership
from questline.progress.counted import Counting, counted
from questline.storage.db import utcnow
from questline.teams import service as teams_service
from questline.teams.models import Team
from questline.web.errors import FieldError, Unprocessable

EVERY = 2**31 - 1
"""A limit that is no limit (every ranked team)."""

SETTLED_AFTER = dt.timedelta(seconds=30)
"""A frozen view's totals are kept across versions once its instant is this far past:
a write whose history is stamped before the instant commits within it (a transaction
outliving it is refused by the statement timeouts long before)."""

Memo = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""``memo(name, build)``: the value ``name`` at the version being served, built once
(``questline.readmodel.service.ReadModel.memo``)."""
Keep = Memo
"""``keep(name, build)``: a value that no later write changes (kept across versions)."""


async def _build_now(_name: str, build: Callable[[], Awaitable[Any]]) -> Any:
    return await build()


@dataclass(frozen=True, slots=True)
class Selection:
    """Which ranking (all defaults: the overall one)."""

    start: dt.datetime | None = None
    end: dt.datetime | None = None
    """Inclusive (``to``)."""
    discipline_id: uuid.UUID | None = None
    before: dt.datetime | None = None
    """Exclusive (a season's ``EndsAt``)."""
    as_of: dt.datetime | None = None
    """Count only what was recorded before this instant (a season's frozen view)."""
    tag: str | None = None
    per_member: bool = False

    @property
    def windowed(self) -> bool:
        return (
            self.start is not None
            or self.end is not None
            or self.before is not None
            or self.as_of is not None
        )

    @property
    def plain(self) -> bool:
        """Served by ``standings`` alone (an index scan, or the per-discipline query)."""
        return not self.windowed and self.tag is None and not self.per_member

    def check(self) -> None:
        if self.start is not None and self.end is not None and self.start > self.end:
            raise Unprocessable(
                "'from' is after 'to'.",
                errors=[FieldError(field="from", message="Must not be after 'to'.")],
            )

    def counting(self, org_id: uuid.UUID) -> Counting:
        return Counting(
            org_id=org_id,
            start=self.start,
            end=self.end,
            before=self.before,
            discipline_id=self.discipline_id,
            as_of=self.as_of,
        )

    def key(self) -> str:
        """A name for what this selection aggregates (memo keys)."""
        parts = (self.start, self.end, self.before, self.discipline_id, self.as_of)
        return "|".join("" if p is None else str(p) for p in parts)


@dataclass(frozen=True, slots=True)
class Contender:
    """A ranked team (neither admin nor archived) as the rankings need it."""

    team_id: uuid.UUID
    name: str
    name_key: str
    tags: frozenset[str]
    """Case-folded."""
    members: int
    score: int
    tasks_completed: int
    reached_at: dt.datetime | None


@dataclass(frozen=True, slots=True)
class Totals:
    """A team's items in a window."""

    points: int
    completions: int
    reached_at: dt.datetime | None


def tag_key(tag: str) -> str:
    return tag.strip().casefold()


async def contenders(session: AsyncSession, *, org_id: uuid.UUID) -> list[Contender]:
    """The organization's ranked teams, with their member counts."""
    members = (
        select(func.count())
        .where(
            TeamMembership.organization_id == Team.organization_id,
            TeamMembership.team_id == Team.id,
        )
        .correlate(Team)
        .scalar_subquery()
    )
    rows = await session.execute(
        select(
            Team.id,
            Team.name,
            Team.name_key,
            Team.tags,
            members,
            Team.score,
            Team.tasks_completed,
            Team.score_reached_at,
        ).where(Team.organization_id == org_id, Team.is_ranked == true())
    )
    return [
        Contender(
            team_id=row[0],
            name=row[1],
            name_key=row[2],
            tags=frozenset(tag_key(t) for t in row[3] or ()),
            members=int(row[4]),
            score=int(row[5]),
            tasks_completed=int(row[6]),
            reached_at=as_utc(row[7]),
        )
        for row in rows.all()
    ]


async def totals(session: AsyncSession, counting: Counting) -> dict[uuid.UUID, Totals]:
    """Each team's points, completions and the time it reached its window score, over
    the items that count (``questline.progress.counted``)."""
    items = counted(counting)
    reached = func.max(case((items.c.points != 0, items.c.at), else_=None))
    rows = await session.execute(
        select(
            items.c.team_id,
            func.coalesce(func.sum(items.c.points), 0),
            func.coalesce(func.sum(items.c.completions), 0),
            reached,
        ).group_by(items.c.team_id)
    )
    return {
        row[0]: Totals(points=int(row[1]), completions=int(row[2]), reached_at=as_utc(row[3]))
        for row in rows.all()
    }


NOTHING = Totals(points=0, completions=0, reached_at=None)
LAST = dt.datetime.max.replace(tzinfo=dt.UTC)


def rank(
    teams: Sequence[Contender],
    found: dict[uuid.UUID, Totals] | None,
    *,
    tag: str | None,
    per_member: bool,
) -> list[Entry]:
    """Every entry of the ranking, ranked from 1. ``found``: the window's totals per
    team (``None``: the teams' current scores)."""
    wanted = None if tag is None else tag_key(tag)
    rows: list[tuple[Any, dt.datetime, str, Entry]] = []
    for team in teams:
        if wanted is not None and wanted not in team.tags:
            continue
        if found is None:
            score, done, reached = team.score, team.tasks_completed, team.reached_at
        else:
            mine = found.get(team.team_id, NOTHING)
            score, done, reached = mine.points, mine.completions, mine.reached_at
        value: Any = Fraction(score, max(1, team.members)) if per_member else score
        entry = Entry(
            rank=0,
            team_id=team.team_id,
            name=team.name,
            score=score,
            tasks_completed=done,
            reached_at=reached,
            member_count=team.members if per_member else None,
        )
        rows.append((-value, reached or LAST, team.name_key, entry))
    rows.sort(key=lambda row: row[:3])
    return [
        Entry(
            rank=position,
            team_id=e.team_id,
            name=e.name,
            score=e.score,
            tasks_completed=e.tasks_completed,
            reached_at=e.reached_at,
            member_count=e.member_count,
        )
        for position, (_, _, _, e) in enumerate(rows, start=1)
    ]


async def everyone(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    selection: Selection,
    memo: Memo = _build_now,
    keep: Keep = _build_now,
) -> list[Entry]:
    """The whole ranking a non-plain selection selects. Its two aggregates (the ranked
    teams, the window's totals) are built once per version; the order is not kept (a
    list per bracket and per-member choice would weigh tens of megabytes at 100,000
    teams): sorting them again costs far less than reading them."""

    async def teams() -> list[Contender]:
        return await contenders(session, org_id=org_id)

    async def window() -> dict[uuid.UUID, Totals] | None:
        if not selection.windowed and selection.discipline_id is None:
            return None
        return await totals(session, selection.counting(org_id))

    found = await _totals(selection, window, memo, keep)
    return rank(
        await memo("contenders", teams), found, tag=selection.tag, per_member=selection.per_member
    )


async def _totals(
    selection: Selection,
    window: Callable[[], Awaitable[dict[uuid.UUID, Totals] | None]],
    memo: Memo,
    keep: Keep,
) -> dict[uuid.UUID, Totals] | None:
    name = f"totals|{selection.key()}"
    settled = selection.as_of is not None and utcnow() >= selection.as_of + SETTLED_AFTER
    found: dict[uuid.UUID, Totals] | None = await (keep if settled else memo)(name, window)
    return found


async def ranking(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    selection: Selection,
    limit: int | None,
    offset: int = 0,
    memo: Memo = _build_now,
    keep: Keep = _build_now,
) -> list[Entry]:
    """A page of the selected ranking (``limit=None``: every ranked team)."""
    selection.check()
    if selection.discipline_id is not None:
        await standings.ensure_discipline_visible(
            session, org_id=org_id, discipline_id=selection.discipline_id
        )
    if selection.plain:
        return await standings.ranking(
            session,
            org_id=org_id,
            limit=EVERY if limit is None else limit,
            offset=offset,
            discipline_id=selection.discipline_id,
        )
    found = await everyone(session, org_id=org_id, selection=selection, memo=memo, keep=keep)
    return found[offset:] if limit is None else found[offset : offset + limit]


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
    memo: Memo = _build_now,
    keep: Keep = _build_now,
) -> list[Entry]:
    """The ``limit`` entries centred on the team; 404 for a team outside the
    organization, 422 for one that is not ranked (admin or archived) or not in the
    bracket."""
    selection.check()
    team = await teams_service.get_team(session, org_id=org_id, team_id=team_id)
    if not team.is_ranked:
        reason = "an admin team" if team.is_admin_team else "archived"
        raise Unprocessable(
            f"The team is {reason}, so it is not on the leaderboard.",
            errors=[FieldError(field="around", message="Name a ranked team.")],
        )
    if selection.plain and selection.discipline_id is None:
        rank_of = await standings.rank_of(session, team=team)
        assert rank_of is not None
        offset, count = centred(rank_of, limit)
        return await ranking(
            session, org_id=org_id, selection=selection, limit=count, offset=offset
        )
    found = await ranking(
        session, org_id=org_id, selection=selection, limit=None, memo=memo, keep=keep
    )
    position = next((e.rank for e in found if e.team_id == team.id), None)
    if position is None:
        raise Unprocessable(
            "The team does not carry the bracket's tag.",
            errors=[FieldError(field="around", message="Name a team of the bracket.")],
        )
    offset, count = centred(position, limit)
    return found[offset : offset + count]


async def rank_in(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    selection: Selection,
    memo: Memo = _build_now,
    keep: Keep = _build_now,
) -> int | None:
    """The team's position in the selected ranking (None: not in it)."""
    found = await ranking(
        session, org_id=org_id, selection=selection, limit=None, memo=memo, keep=keep
    )
    return next((e.rank for e in found if e.team_id == team_id), None)

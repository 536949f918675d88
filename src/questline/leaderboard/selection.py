"""The ranking a request selects besides the plain current standings (``standings``).

* **Windowed** (``from``/``to``, or a season's ``[StartsAt, EndsAt)``): teams ranked by
  the points of the items that count in the window — ``questline.progress.counted``,
  the one source of every windowed ranking (completions, and the other kinds named in
  ``COUNTED``, such as point adjustments, count the same way). Ties: the earlier time the
  team reached its window score (its last counted item that changed it), then the name;
  teams with nothing in the window follow, by name. With ``as_of`` (a season's frozen
  view): only what was recorded before that instant.
* **Bracket** (``tag``): only the teams carrying that tag (compared ignoring case:
  ``questline.teams.tags``), ranked 1, 2, 3 … among themselves.
* **Per member** (``per_member``): by points divided by the team's member count (at
  least 1), in the order of the exact quotients (``per_member_order``); ties as above.
* **Around a team** (``around``): the ``limit`` ranked entries centred on that team
  (``(limit-1)//2`` before it, the rest after; fewer at the edges), with their true
  ranks, in whichever ranking the other parameters select.

The plain overall ranking is in ``standings`` (an index range scan), and so is the plain
per-discipline one. Every other ranking is **one statement** (``ranked``): the
organization's ranked teams, joined to the window's totals per team
(``counted.per_team``) and, per member, to their member counts
(``teams.service.member_counts``), filtered to the bracket, ordered and cut to the page
by the database — which returns the page's rows only, where ranking in Python read
every team and every team's totals on a miss (docs/performance.md, "Season, bracket
and per-member rankings"). A team's position (``around``, the overview's season rank)
is the same statement numbered by ``row_number()``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    FromClause,
    Select,
    UnaryExpression,
    case,
    cast,
    func,
    literal,
    outerjoin,
    select,
    true,
)
from sqlalchemy.ext.asyncio import AsyncSession

from questline.adjustments.window_items import adjustments
from questline.leaderboard import standings
from questline.leaderboard.standings import Entry, as_utc
from questline.progress.counted import Counting, Source, completions, per_team
from questline.teams import service as teams_service
from questline.teams import tags
from questline.teams.models import Team
from questline.teams.ranking import ranking_order
from questline.web.errors import FieldError, Unprocessable

COUNTED: tuple[Source, ...] = (completions, adjustments)
"""Every kind of item that counts in a windowed ranking (``from``/``to``, seasons, a
season's frozen view): completions, and point adjustments (their points at their time)."""

EVERY = 2**31 - 1
"""A limit that is no limit (every ranked team)."""

Memo = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""``memo(name, build)``: the value ``name`` at the version being served, built once
(``questline.readmodel.service.ReadModel.memo``)."""


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


def per_member_order(
    score: ColumnElement[int], members: ColumnElement[int]
) -> list[UnaryExpression[Any]]:
    """The order of ``score / max(1, members)``, highest first, exact in integers and
    alike on both dialects: the quotient's floor, then its fraction ``rest / m`` as a
    double. Two equal quotients give the same (correctly rounded) double; two different
    ones differ by at least ``1 / (m·n)``, which a double in ``[0, 1)`` resolves while
    ``m·n`` stays below 2**53 (teams of up to 94 million members). No multiplication:
    nothing overflows."""
    divisor = case((members > 1, members), else_=1)
    rest = ((score % divisor) + divisor) % divisor
    whole = (score - rest) // divisor
    fraction = cast(rest, Float) / cast(divisor, Float)
    return [whole.desc(), fraction.desc()]


@dataclass(frozen=True, slots=True)
class Ranked:
    """A ranking's statement: rows ``(team_id, name, score, tasks_completed, reached_at,
    member_count)`` of the ranked teams it selects, and their order."""

    query: Select[Any]
    order: list[UnaryExpression[Any]]

    def page(self, *, limit: int, offset: int) -> Select[Any]:
        return self.query.order_by(*self.order).limit(limit).offset(offset)

    def position(self, team_id: uuid.UUID) -> Select[Any]:
        """The team's 1-based position (no row: not in the ranking)."""
        numbered = self.query.add_columns(
            func.row_number().over(order_by=self.order).label("position")
        ).subquery("numbered")
        return select(numbered.c.position).where(numbered.c.team_id == team_id)


def ranked(
    org_id: uuid.UUID, selection: Selection, *, dialect: str, spellings: list[str] | None
) -> Ranked:
    """The statement of a non-plain selection; ``spellings``: the bracket's tag as the
    teams spell it (``None``: no bracket)."""
    source: FromClause = Team.__table__
    score: ColumnElement[int] = Team.__table__.c.score
    done: ColumnElement[int] = Team.__table__.c.tasks_completed
    reached: ColumnElement[Any] = Team.__table__.c.score_reached_at
    if selection.windowed or selection.discipline_id is not None:
        totals = per_team(selection.counting(org_id), COUNTED)
        source = outerjoin(source, totals, totals.c.team_id == Team.id)
        score = func.coalesce(totals.c.points, 0)
        done = func.coalesce(totals.c.completions, 0)
        reached = totals.c.reached
    members: ColumnElement[Any] = literal(None)
    if selection.per_member:
        counts = teams_service.member_counts(org_id)
        source = outerjoin(source, counts, counts.c.team_id == Team.id)
        members = func.coalesce(counts.c.members, 0)
    rows = (
        select(
            Team.id.label("team_id"),
            Team.name.label("name"),
            Team.name_key.label("name_key"),
            score.label("score"),
            done.label("tasks_completed"),
            reached.label("reached_at"),
            members.label("member_count"),
        )
        .select_from(source)
        .where(Team.organization_id == org_id, Team.is_ranked == true())
    )
    if spellings is not None:
        rows = rows.where(tags.carries_any(dialect, spellings))
    found = rows.subquery("ranked")
    c = found.c
    points = per_member_order(c.score, c.member_count) if selection.per_member else c.score
    query = select(c.team_id, c.name, c.score, c.tasks_completed, c.reached_at, c.member_count)
    return Ranked(query, ranking_order(points, c.reached_at, c.name_key, reached_may_be_null=True))


def entries(rows: Sequence[Any], *, offset: int, per_member: bool) -> list[Entry]:
    return [
        Entry(
            rank=offset + index + 1,
            team_id=row.team_id,
            name=row.name,
            score=int(row.score),
            tasks_completed=int(row.tasks_completed),
            reached_at=as_utc(row.reached_at),
            member_count=int(row.member_count) if per_member else None,
        )
        for index, row in enumerate(rows)
    ]


async def _statement(
    session: AsyncSession, *, org_id: uuid.UUID, selection: Selection, memo: Memo
) -> Ranked | None:
    """The selection's statement (``None``: an empty bracket). The tags' spellings are
    read once per version."""
    spellings = None
    if selection.tag is not None:

        async def present() -> list[str]:
            return await tags.tag_spellings(session, org_id=org_id)

        spellings = tags.matching(await memo("tag-spellings", present), selection.tag)
        if not spellings:
            return None
    dialect = session.get_bind().dialect.name
    return ranked(org_id, selection, dialect=dialect, spellings=spellings)


async def ranking(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    selection: Selection,
    limit: int | None,
    offset: int = 0,
    memo: Memo = _build_now,
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
    statement = await _statement(session, org_id=org_id, selection=selection, memo=memo)
    if statement is None:
        return []
    page = statement.page(limit=EVERY if limit is None else limit, offset=offset)
    rows = (await session.execute(page)).all()
    return entries(rows, offset=offset, per_member=selection.per_member)


async def position_of(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    selection: Selection,
    memo: Memo = _build_now,
) -> int | None:
    """The team's 1-based position in a non-plain ranking (None: not in it)."""
    statement = await _statement(session, org_id=org_id, selection=selection, memo=memo)
    if statement is None:
        return None
    found = await session.scalar(statement.position(team_id))
    return None if found is None else int(found)


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
    position = await rank_in(
        session, org_id=org_id, team_id=team.id, selection=selection, memo=memo
    )
    if position is None:
        raise Unprocessable(
            "The team does not carry the bracket's tag.",
            errors=[FieldError(field="around", message="Name a team of the bracket.")],
        )
    offset, count = centred(position, limit)
    return await ranking(
        session, org_id=org_id, selection=selection, limit=count, offset=offset, memo=memo
    )


async def rank_in(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    selection: Selection,
    memo: Memo = _build_now,
) -> int | None:
    """The team's position in the selected ranking (None: not in it)."""
    selection.check()
    if selection.discipline_id is not None:
        await standings.ensure_discipline_visible(
            session, org_id=org_id, discipline_id=selection.discipline_id
        )
    if selection.plain:
        # The plain per-discipline ranking: its own order (``standings``), read whole.
        found = await ranking(session, org_id=org_id, selection=selection, limit=None)
        return next((e.rank for e in found if e.team_id == team_id), None)
    return await position_of(
        session, org_id=org_id, team_id=team_id, selection=selection, memo=memo
    )

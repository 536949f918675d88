"""The ranked teams' places in the organization's leaderboard order, for the overview's
``Rank``: counted in SQL for a small organization, else read from a compact memo of the
order built once per read-model version (``Ranks``)."""

from __future__ import annotations

import array
import bisect
import functools
import sys
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, LargeBinary, Text, bindparam, func, literal, select, true
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from questline.teams.models import Team
from questline.teams.ranking import ranking_order

RANK_MEMO_MIN = 500
"""From this many ranked teams on, ranks come from a memo of the organization's order
(built once per version) instead of counting the teams ahead in SQL: that count is a
range scan as long as the rank, soon the larger part of the overview's statement
(docs/performance.md, "Figures behind the code")."""

RANK_BYTES = 20
"""A ranked team's share of the memo: its 16-byte id and a 4-byte position."""


@dataclass(frozen=True, slots=True)
class Ranks:
    """The ranked teams' positions at one version (0: first), or none for an
    organization small enough, or too large for the read model's bound, to count in SQL.

    Compact: the teams' 16-byte ids in byte order as two arrays of their 64-bit halves,
    and each one's place, so a look-up is a binary search in C — 20 bytes a team where a
    dict of ids took about 110 (a million-team organization: 19 MiB, not 110)."""

    highs: array.array[int] | None = None
    lows: array.array[int] | None = None
    positions: array.array[int] | None = None

    @classmethod
    def of(cls, ids: bytes, positions: array.array[int]) -> Ranks:
        """From the ids (16 bytes each, in byte order) and their places, alike ordered."""
        halves = array.array("Q")
        halves.frombytes(ids)
        if sys.byteorder == "little":
            halves.byteswap()  # each half as the big-endian number that orders like bytes
        return cls(halves[0::2], halves[1::2], positions)

    @property
    def counted_in_sql(self) -> bool:
        return self.positions is None

    @property
    def memo_bytes(self) -> int:
        """What the read model counts for this memo in its bound."""
        return RANK_BYTES * len(self.positions or ()) + 300

    def position(self, team_id: bytes) -> int | None:
        """The team's place in the order (0: first), None when it is not among them."""
        highs, lows, positions = self.highs, self.lows, self.positions
        if highs is None or lows is None or positions is None:
            return None
        high, low = int.from_bytes(team_id[:8], "big"), int.from_bytes(team_id[8:], "big")
        at = bisect.bisect_left(highs, high)
        while at < len(highs) and highs[at] == high:
            if lows[at] == low:
                return positions[at]
            at += 1
        return None


async def ranks(session: AsyncSession, *, org_id: uuid.UUID, room: int) -> Ranks:
    """The organization's leaderboard order (ranked teams; score, then who reached it
    first, then name) as positions by team id: one statement, memoized per version.
    Counted in SQL below ``RANK_MEMO_MIN`` teams, and above what ``room`` bytes hold (the
    largest memo the read model keeps: one it drops would be rebuilt for every
    overview)."""
    max_teams = room // RANK_BYTES
    ranked = (Team.organization_id == org_id, Team.is_ranked == true())
    bounded = select(Team.id).where(*ranked).limit(max_teams + 1).subquery()
    found = await session.scalar(select(func.count()).select_from(bounded))
    if not RANK_MEMO_MIN <= (found or 0) <= max_teams:
        return Ranks()
    dialect = session.get_bind().dialect.name
    row = (await session.execute(_packed_ranks_query(dialect), {"org": org_id})).one()
    # In bytes' order, which ``Ranks.position`` bisects: PostgreSQL orders a uuid by its
    # bytes (the aggregate's own ORDER BY), SQLite the ids' lowercase hex (checked).
    return Ranks.of(*_unpacked(dialect, row[0], row[1]))


@functools.cache
def _packed_ranks_query(dialect: str) -> Any:
    """The ranked teams' ids and places (0 first) in id order, packed into one row of two
    values: on PostgreSQL two ``bytea`` (each id's 16 bytes, each place's 4, big-endian),
    on SQLite two strings (the ids' hex, the places comma-separated). Reading tens of
    thousands of rows as result rows cost more than the query (profiled: a tenth of the
    platform traffic's samples went to this memo's rows). Built once."""
    place = func.row_number().over(
        order_by=ranking_order(Team.score, Team.score_reached_at, Team.name_key)
    ) - literal(1)
    ranked = select(Team.id.label("id"), place.label("place")).where(
        Team.organization_id == bindparam("org"), Team.is_ranked == true()
    )
    if dialect == "postgresql":
        inner = ranked.subquery()
        nothing = sql_cast(literal(""), LargeBinary)

        def packed(value: Any) -> Any:
            ordered = aggregate_order_by(nothing, inner.c.id)
            return func.string_agg(value, ordered, type_=LargeBinary)

        return select(
            packed(func.uuid_send(inner.c.id)),
            packed(func.int4send(sql_cast(inner.c.place, Integer))),
        )
    inner = ranked.order_by(Team.id).subquery()
    return select(
        func.group_concat(sql_cast(inner.c.id, Text), literal("")),
        func.group_concat(inner.c.place, literal(",")),
    )


def _unpacked(dialect: str, ids: Any, places: Any) -> tuple[bytes, array.array[int]]:
    positions = array.array("i")
    if ids is None:
        return b"", positions
    if dialect == "postgresql":
        positions.frombytes(places)
        if sys.byteorder == "little":
            positions.byteswap()
        return bytes(ids), positions
    positions.extend(int(p) for p in places.split(","))
    return bytes.fromhex(_in_id_order(ids, positions)), positions


def _in_id_order(hex_ids: str, positions: array.array[int]) -> str:
    """SQLite's ids (32 lowercase hex digits each: bytes' order) sorted, their places
    with them, in place. SQLite keeps a subquery's order for the aggregate above it
    (an aggregate query is not flattened into an ordered subquery), but does not
    promise it: checked, and sorted here if it did not."""
    keys = [hex_ids[i : i + 32] for i in range(0, len(hex_ids), 32)]
    if all(keys[i] < keys[i + 1] for i in range(len(keys) - 1)):
        return hex_ids
    order = sorted(range(len(keys)), key=keys.__getitem__)
    positions[:] = array.array("i", [positions[i] for i in order])
    return "".join(keys[i] for i in order)

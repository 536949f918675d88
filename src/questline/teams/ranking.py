"""The order teams rank in, written once: more points first; at equal points, the team
that reached them first; then the name, case-folded (``name_key``). Every ranking orders
by these terms — the leaderboard's statements (overall, per discipline), its selections
(tag, bracket, season, per member), the ranks memo — and the overview counts the teams
ahead of one by the same terms (``teams_ahead``).

The overall order matches the index ``ix_teams_leaderboard`` term for term, so a page is
an index range scan; a computed ``reached`` that may be null (a team with no points in a
discipline or a window) puts those teams last.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ColumnElement, UnaryExpression
from sqlalchemy.orm import QueryableAttribute

Term = ColumnElement[Any] | QueryableAttribute[Any]
"""A column or an expression of a ranking statement."""


PlaceKey = tuple[int, float]
"""A ranked team's place in the overall order but for its name: teams with smaller keys
rank first; at an equal key the name decides."""


def place_key(score: int, reached_at: dt.datetime) -> PlaceKey:
    """The overall order's terms in Python (``ranking_order``'s, but the name): more
    points first, then who reached them first."""
    at = reached_at if reached_at.tzinfo is not None else reached_at.replace(tzinfo=dt.UTC)
    return (-score, at.timestamp())


def tie_break(
    reached_at: Term, name_key: Term, *, reached_may_be_null: bool
) -> list[UnaryExpression[Any]]:
    """The order among teams with equal points: who reached them first, then the name.
    The plain ascending form where ``reached_at`` is never null keeps the index usable
    on SQLite (whose ascending order puts nulls first)."""
    reached = reached_at.asc().nulls_last() if reached_may_be_null else reached_at.asc()
    return [reached, name_key.asc()]


def ranking_order(
    points: Term | list[UnaryExpression[Any]],
    reached_at: Term,
    name_key: Term,
    *,
    reached_may_be_null: bool = False,
) -> list[UnaryExpression[Any]]:
    """The whole order: ``points`` highest first (or an order of its own, such as the
    per-member quotient's terms), then ``tie_break``."""
    first = points if isinstance(points, list) else [points.desc()]
    return [*first, *tie_break(reached_at, name_key, reached_may_be_null=reached_may_be_null)]


def teams_ahead(ahead: Any, team: Any) -> list[list[ColumnElement[bool]]]:
    """``ranking_order`` as the disjoint conditions for a team row ``ahead`` to rank
    before ``team`` (two aliases of the teams table): each is one tight range of the
    leaderboard index, so counting them is three index range counts."""
    same_score = ahead.score == team.score
    return [
        [ahead.score > team.score],
        [same_score, ahead.score_reached_at < team.score_reached_at],
        [
            same_score,
            ahead.score_reached_at == team.score_reached_at,
            ahead.name_key < team.name_key,
        ],
    ]

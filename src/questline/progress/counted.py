"""The points that count for a ranking over a time window, from the score history's
tables: **the one source every windowed ranking reads** (``from``/``to``, seasons, and
the frozen view of a season).

An *item* is something that changed a team's score at a time ``at`` on the timeline: a
completion (``CompletedAt``, its points) — and whatever other kind a domain above this
one defines as a ``Source`` (point adjustments: their points at their time); the
rankings, which sit above both, name the sources that count
(``questline.leaderboard.selection.COUNTED``) and pass them in. Each source gives,
for a ``Counting``, the rows ``(team_id, points, at, completions)`` of the items that
count:

* **live** (``as_of`` is ``None``): the items that exist now (a withdrawn completion
  no longer exists, so it never counts);
* **as of an instant** (``as_of``): the items that existed at that instant — recorded
  before it, and not withdrawn before it. A completion recorded later, even back-dated
  into the window, is left out; one withdrawn later still counts. Read from the
  append-only ``score_events`` (a completion's row and, for the same team and task,
  the next withdrawal's row).

and only those with ``at`` inside the window (``start ≤ at``, ``at ≤ end``,
``at < before``; each bound optional) and, with ``discipline_id``, in that discipline.

``per_team`` sums them per team in the database (the rankings join it to the teams and
rank there: ``questline.leaderboard.selection``).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Select,
    Subquery,
    and_,
    case,
    cast,
    exists,
    func,
    literal,
    or_,
    select,
    union_all,
)
from sqlalchemy.orm import aliased

from questline.progress.models import ScoreChange, ScoreEvent, TaskCompletion


@dataclass(frozen=True, slots=True)
class Counting:
    """Which items count: an organization, a window, a discipline, an instant."""

    org_id: uuid.UUID
    start: dt.datetime | None = None
    """Inclusive."""
    end: dt.datetime | None = None
    """Inclusive (``to`` of the windowed leaderboard)."""
    before: dt.datetime | None = None
    """Exclusive (a season's ``EndsAt``)."""
    discipline_id: uuid.UUID | None = None
    as_of: dt.datetime | None = None
    """Count what existed at this instant (a season's freeze), else what exists now."""

    def window(self, at: Any) -> list[ColumnElement[bool]]:
        """The window's conditions on a column ``at``."""
        found: list[ColumnElement[bool]] = []
        if self.start is not None:
            found.append(at >= self.start)
        if self.end is not None:
            found.append(at <= self.end)
        if self.before is not None:
            found.append(at < self.before)
        return found


Item = Select[uuid.UUID, int, dt.datetime, int]
Source = Callable[[Counting], Item]
"""Rows ``(team_id, points, at, completions)`` of one kind of item (``completions``:
how many completions the row stands for, 1 or 0)."""


def completions(counting: Counting) -> Item:
    """The completions that count."""
    if counting.as_of is None:
        done = TaskCompletion
        query = select(
            done.team_id.label("team_id"),
            done.points.label("points"),
            done.completed_at.label("at"),
            literal(1).label("completions"),
        ).where(done.organization_id == counting.org_id, *counting.window(done.completed_at))
        if counting.discipline_id is not None:
            query = query.where(done.discipline_id == counting.discipline_id)
        return query
    added = ScoreEvent
    taken = aliased(ScoreEvent)
    # The steps that took a completion back (a withdrawal, a task removed) recorded
    # before the instant: few, so read once into a table of their own (MATERIALIZED),
    # which the check below probes by hash or by an automatic index, instead of
    # walking each team's whole history once per completion (SQLite did that: 8 s of
    # CPU at 100,000 teams; docs/performance.md).
    undone = (
        select(taken.team_id, taken.task_id, taken.recorded_at, taken.id)
        .where(
            taken.organization_id == counting.org_id,
            taken.task_id.is_not(None),
            taken.kind != ScoreChange.COMPLETED,
            taken.recorded_at < counting.as_of,
        )
        .cte("undone_by_then")
        .prefix_with("MATERIALIZED")
    )
    # The same team and task's next step recorded after this completion is its
    # withdrawal (completions of a team and task alternate with their withdrawals).
    withdrawn_by_then = exists().where(
        undone.c.team_id == added.team_id,
        undone.c.task_id == added.task_id,
        or_(
            undone.c.recorded_at > added.recorded_at,
            and_(undone.c.recorded_at == added.recorded_at, undone.c.id > added.id),
        ),
    )
    query = select(
        added.team_id.label("team_id"),
        added.delta.label("points"),
        added.at.label("at"),
        literal(1).label("completions"),
    ).where(
        added.organization_id == counting.org_id,
        added.kind == ScoreChange.COMPLETED,
        added.recorded_at < counting.as_of,
        *counting.window(added.at),
        ~withdrawn_by_then,
    )
    if counting.discipline_id is not None:
        query = query.where(added.discipline_id == counting.discipline_id)
    return query


def counted(counting: Counting, sources: Sequence[Source]) -> Any:
    """Every item of ``sources`` that counts, as one subquery ``(team_id, points, at,
    completions)``."""
    parts = [source(counting) for source in sources]
    return (parts[0] if len(parts) == 1 else union_all(*parts)).subquery("counted")


def per_team(counting: Counting, sources: Sequence[Source]) -> Subquery:
    """Each team's window totals, as one subquery ``(team_id, points, completions,
    reached)``: the points and completions of its items (of ``sources``) that count, and
    ``reached``, the
    time it reached its window score — that of its latest counted item that changed it
    (an item of 0 points changes nothing), NULL when none did. Teams without any item
    have no row."""
    items = counted(counting, sources)
    return (
        select(
            items.c.team_id,
            # PostgreSQL sums a BIGINT into a NUMERIC: back to an integer, for the
            # integer arithmetic of the per-member order.
            cast(func.sum(items.c.points), BigInteger).label("points"),
            cast(func.sum(items.c.completions), BigInteger).label("completions"),
            func.max(case((items.c.points != 0, items.c.at), else_=None)).label("reached"),
        )
        .group_by(items.c.team_id)
        .subquery("per_team")
    )

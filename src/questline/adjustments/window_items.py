"""Point adjustments as items of the windowed rankings (a ``questline.progress.counted``
source, named in ``questline.leaderboard.selection.COUNTED``):
an adjustment counts like a completion of that many points at its ``At`` — in
``from``/``to`` rankings, seasons and a season's frozen view — and never under a
discipline (it belongs to none)."""

from __future__ import annotations

from sqlalchemy import false, literal, or_, select

from questline.adjustments.models import ScoreAdjustment
from questline.progress.counted import Counting, Item


def adjustments(counting: Counting) -> Item:
    """The adjustments that count: standing now (live), or, ``as_of`` an instant,
    recorded before it and not withdrawn before it."""
    adjusted = ScoreAdjustment
    query = select(
        adjusted.team_id.label("team_id"),
        adjusted.points.label("points"),
        adjusted.at.label("at"),
        literal(0).label("completions"),
    ).where(adjusted.organization_id == counting.org_id, *counting.window(adjusted.at))
    if counting.as_of is None:
        query = query.where(adjusted.withdrawn_at.is_(None))
    else:
        query = query.where(
            adjusted.created_at < counting.as_of,
            or_(adjusted.withdrawn_at.is_(None), adjusted.withdrawn_at >= counting.as_of),
        )
    if counting.discipline_id is not None:
        query = query.where(false())
    return query

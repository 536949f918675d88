"""What a windowed ranking counts: every change of a team's score still standing, at
its time on the timeline — the completions not withdrawn (their points at
``CompletedAt``, each one task) and the adjustments not withdrawn (their points at
``At``, no task, no discipline).

One selectable for every ranking that counts a window (``from``/``to`` today; any
other window of completions and adjustments should take it too), so an adjustment
counts wherever a completion of that many points at that time would.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import Select, Subquery, Uuid, cast, literal_column, null, select, union_all

from questline.adjustments.models import ScoreAdjustment
from questline.progress.models import TaskCompletion


def counted_changes(
    org_id: uuid.UUID,
    *,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    discipline_id: uuid.UUID | None = None,
) -> Subquery:
    """Columns ``team_id, discipline_id, points, at, tasks`` (``tasks``: 1 for a
    completion, 0 for an adjustment) of the organization's standing changes with
    ``start <= at <= end`` (either open). With ``discipline_id``: that discipline's
    completions only (adjustments belong to no discipline)."""
    done = TaskCompletion
    completions: Select[Any, Any, Any, Any, Any] = select(
        done.team_id.label("team_id"),
        done.discipline_id.label("discipline_id"),
        done.points.label("points"),
        done.completed_at.label("at"),
        literal_column("1").label("tasks"),
    ).where(done.organization_id == org_id)
    if start is not None:
        completions = completions.where(done.completed_at >= start)
    if end is not None:
        completions = completions.where(done.completed_at <= end)
    if discipline_id is not None:
        return completions.where(done.discipline_id == discipline_id).subquery("counted")
    adjusted = ScoreAdjustment
    adjustments: Select[Any, Any, Any, Any, Any] = select(
        adjusted.team_id,
        cast(null(), Uuid),
        adjusted.points,
        adjusted.at,
        literal_column("0"),
    ).where(adjusted.organization_id == org_id, adjusted.withdrawn_at.is_(None))
    if start is not None:
        adjustments = adjustments.where(adjusted.at >= start)
    if end is not None:
        adjustments = adjustments.where(adjusted.at <= end)
    return union_all(completions, adjustments).subquery("counted")

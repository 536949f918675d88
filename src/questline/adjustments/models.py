"""``score_adjustments``: each manual change of a team's score, kept after withdrawal.

The score history (``score_events``) carries an adjustment's step like a completion's
(``ScoreChange.ADJUSTED`` at its ``at``, ``ScoreChange.ADJUSTMENT_WITHDRAWN`` when
taken back); this table is its current state, as ``task_completions`` is for tasks:
the windowed rankings count the adjustments still standing (``withdrawn_at IS NULL``)
at their ``at``. A withdrawal marks the row instead of deleting it, so the list keeps
who changed what, when, and why.
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, tenant_foreign_key, utcnow

MAX_POINTS = 2**31 - 1
"""An adjustment's bound either way: the range of ``points`` here and of the history's
``delta`` (a 32-bit integer); the team's score (64-bit) is checked on each change."""
MAX_SCORE = 2**63 - 1
"""The range of ``teams.score`` (BIGINT) either way."""
MAX_REASON = 500
MAX_SUBJECT = 255


class ScoreAdjustment(Base):
    __tablename__ = "score_adjustments"
    __table_args__ = (
        tenant_foreign_key("team_id", "teams"),
        # A team's list, in time order; the windowed rankings' look-up per team.
        Index("ix_score_adjustments_team_at", "organization_id", "team_id", "at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    team_id: Mapped[uuid.UUID]
    points: Mapped[int]
    """Non-zero, within ``MAX_POINTS`` either way."""
    reason: Mapped[str] = mapped_column(String(MAX_REASON))
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    """When it counts on the timeline (default: when it was made)."""
    recorded_by: Mapped[str] = mapped_column(String(MAX_SUBJECT))
    """The subject of the admin who made it."""
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    withdrawn_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, default=None)
    withdrawn_by: Mapped[str | None] = mapped_column(String(MAX_SUBJECT), default=None)

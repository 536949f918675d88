"""Progress tables: which tasks each team completed, and the score history.

``task_completions`` holds the current state (one row per team and task, the primary
key makes completing idempotent). ``score_events`` is the append-only ledger of every
change of a team's score; nothing ever updates or deletes its rows (a withdrawal
appends a negative step). Both carry ``organization_id`` in their keys and reach the
team through the composite key ``(organization_id, team_id)``.
"""

from __future__ import annotations

import datetime as dt
import enum
import uuid

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, tenant_foreign_key, text_enum, utcnow


class ScoreChange(enum.StrEnum):
    COMPLETED = "Completed"
    """The team completed the task: +Points."""
    WITHDRAWN = "Withdrawn"
    """An admin withdrew the completion: minus its Points."""
    TASK_REMOVED = "TaskRemoved"
    """The task was deleted with ``?force=true`` (discipline DELETE or PUT): minus its Points."""
    ADJUSTED = "Adjusted"
    """An admin adjusted the score (``questline.adjustments``): its Points, either sign."""
    ADJUSTMENT_WITHDRAWN = "AdjustWithdrawn"
    """An admin withdrew an adjustment: minus its Points (16 characters at most: the
    column's length)."""
    HINT_UNLOCKED = "HintUnlocked"
    """The team unlocked a hint (``questline.learners``): minus its Cost."""


COMPLETIONS_STEP = {
    ScoreChange.COMPLETED: 1,
    ScoreChange.WITHDRAWN: -1,
    ScoreChange.TASK_REMOVED: -1,
    ScoreChange.ADJUSTED: 0,
    ScoreChange.ADJUSTMENT_WITHDRAWN: 0,
    ScoreChange.HINT_UNLOCKED: 0,
}
"""How each kind of change moves a team's count of completed tasks."""


class TaskCompletion(Base):
    __tablename__ = "task_completions"
    __table_args__ = (
        tenant_foreign_key("team_id", "teams"),
        # Per-discipline leaderboard and overview: the team's completions in one discipline.
        Index("ix_task_completions_discipline", "organization_id", "discipline_id", "team_id"),
        # Removing tasks (and the tasks FK check) finds completions by task, across teams.
        Index("ix_task_completions_task", "task_id"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    team_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    task_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tasks.id"), primary_key=True)
    """No cascade: a task with completions is removed only through the progress hook,
    which withdraws them first (so that scores and history stay right)."""
    discipline_id: Mapped[uuid.UUID]
    points: Mapped[int]
    """The points awarded at completion; a withdrawal takes back exactly these."""
    completed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    member_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    """The member of the team who completed the task (no foreign key: a member who
    leaves keeps the credit in the history)."""
    recorded_by: Mapped[str | None] = mapped_column(String(200), default=None)
    """Who recorded the completion: the caller's subject."""


class ScoreEvent(Base):
    __tablename__ = "score_events"
    __table_args__ = (
        tenant_foreign_key("team_id", "teams"),
        # A team's graph reads its history in time order, and nothing else.
        Index("ix_score_events_team_at", "organization_id", "team_id", "at", "id"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    team_id: Mapped[uuid.UUID]
    task_id: Mapped[uuid.UUID | None]
    """No foreign key: history outlives the tasks it mentions. ``None`` for an
    adjustment's steps."""
    discipline_id: Mapped[uuid.UUID | None]
    """``None`` for an adjustment's steps: they belong to no discipline, so the
    per-discipline graphs leave them out."""
    adjustment_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    """The adjustment of an ``Adjusted`` or ``AdjustWithdrawn`` step (no foreign key,
    like ``task_id``)."""
    kind: Mapped[ScoreChange] = mapped_column(text_enum(ScoreChange))
    delta: Mapped[int]
    score_after: Mapped[int] = mapped_column(BigInteger)
    """The team's score right after this change was applied (in the order applied)."""
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    """When the change counts on the graph: the completion time, or the withdrawal time."""
    recorded_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)

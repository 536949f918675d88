"""A team's attempts at ``Answer`` tasks and the hints it unlocked."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, tenant_foreign_key, utcnow

SEALED_AS = "submitted answer"
"""The purpose a submitted answer is sealed for (``storage.sealing``)."""


class TaskAttempt(Base):
    """One counted attempt (refused attempts are not stored). The submitted answer is
    sealed (``storage.sealing``): a right one is the task's answer, which a copy of the
    database must not reveal; admins read it back through the API."""

    __tablename__ = "task_attempts"
    __table_args__ = (
        tenant_foreign_key("team_id", "teams"),
        # The team's attempts at a task (MaxAttempts), and its list in order.
        Index("ix_task_attempts_team", "organization_id", "team_id", "task_id"),
        # One member's recent attempts (the rate limit).
        Index("ix_task_attempts_actor", "organization_id", "actor", "at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    team_id: Mapped[uuid.UUID]
    task_id: Mapped[uuid.UUID]
    """No foreign key: the history outlives the task."""
    member_id: Mapped[uuid.UUID | None]
    actor: Mapped[str] = mapped_column(String(200))
    """Whose rate it counts against: the member's id, or the admin's subject."""
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    correct: Mapped[bool]
    answer: Mapped[str] = mapped_column(Text)
    """The submitted answer, sealed."""


class HintUnlock(Base):
    __tablename__ = "hint_unlocks"
    __table_args__ = (tenant_foreign_key("team_id", "teams"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    team_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    task_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    hint_index: Mapped[int] = mapped_column(primary_key=True)
    cost: Mapped[int]
    """What the team paid (the hint's cost when unlocked)."""
    unlocked_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    unlocked_by: Mapped[str] = mapped_column(String(200))
    """The caller's subject."""
    member_id: Mapped[uuid.UUID | None]

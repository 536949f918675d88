"""An organization's LRS and the statements waiting for it (or refused by it)."""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, text_enum, utcnow


class StatementStatus(enum.StrEnum):
    PENDING = "Pending"
    """Waiting for its first attempt or a retry."""
    SENT = "Sent"
    """The LRS answered 2xx (it stored the statement, or already had it)."""
    FAILED = "Failed"
    """The LRS refused it (4xx) or every attempt failed: ``GET /organization/xapi/failures``."""


class StatementKind(enum.StrEnum):
    TASK = "task"
    LEVEL = "level"
    DISCIPLINE = "discipline"
    VOIDED = "voided"
    ADJUSTED = "adjusted"
    ANSWERED = "answered"


class LrsConnection(Base):
    """``PUT /organization/xapi``: one LRS per organization."""

    __tablename__ = "xapi_lrs"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    endpoint: Mapped[str] = mapped_column(String(2048))
    """The LRS's xAPI base URL; statements go to ``<endpoint>/statements``."""
    username: Mapped[str | None] = mapped_column(String(255))
    password: Mapped[str | None] = mapped_column(String(2000))
    """Basic auth, sealed (``xapi.sealing``); never returned, logged or exported."""
    token: Mapped[str | None] = mapped_column(String(6000))
    """``Authorization: Bearer``, sealed; never returned, logged or exported."""
    failing_since: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(String(1000))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class XapiStatement(Base):
    """One statement for the organization's LRS, built when its event was fanned out."""

    __tablename__ = "xapi_statements"
    __table_args__ = (
        # The dispatcher claims due statements, oldest due first.
        Index("ix_xapi_statements_due", "status", "next_attempt_at"),
        # A withdrawal finds the statements it voids (the team's, by task, level...).
        Index("ix_xapi_statements_team", "organization_id", "team_id", "kind"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("xapi_lrs.organization_id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    """The statement's ``id``: uuid5 of the event (the same on every retry)."""
    event_id: Mapped[uuid.UUID]
    kind: Mapped[StatementKind] = mapped_column(text_enum(StatementKind))
    team_id: Mapped[uuid.UUID]
    task_id: Mapped[uuid.UUID | None]
    level_id: Mapped[uuid.UUID | None]
    discipline_id: Mapped[uuid.UUID | None]
    voided: Mapped[bool] = mapped_column(default=False)
    """A later ``voided`` statement refers to this one."""
    statement: Mapped[Any] = mapped_column(JSON)
    status: Mapped[StatementStatus] = mapped_column(text_enum(StatementStatus))
    alone: Mapped[bool] = mapped_column(default=False)
    """Sent on its own: its batch was refused with a 4xx (isolating the bad statement)."""
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    last_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    last_status_code: Mapped[int | None]
    last_error: Mapped[str | None] = mapped_column(String(1000))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)

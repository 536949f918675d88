"""``submissions``: each piece of work a team's member sent for a ``Review`` task, with
the admin's decision.

A submission is never rewritten once decided: a rejected team submits again as a new
row, so the list keeps every attempt and every reviewer's comment. At most one is
pending per team and task (a partial unique index backs the service's check against two
members submitting at once).
"""

from __future__ import annotations

import datetime as dt
import enum
import uuid

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy import text as sql
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, tenant_foreign_key, text_enum, utcnow

MAX_TEXT = 10_000
MAX_URL = 2048
MAX_COMMENT = 2_000
MAX_SUBJECT = 255


class SubmissionState(enum.StrEnum):
    PENDING = "Pending"
    APPROVED = "Approved"
    REJECTED = "Rejected"


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        tenant_foreign_key("team_id", "teams"),
        # The review queue: an organization's submissions in one state, oldest first.
        Index("ix_submissions_queue", "organization_id", "state", "submitted_at", "id"),
        # A team's list, oldest first.
        Index("ix_submissions_team", "organization_id", "team_id", "submitted_at", "id"),
        # One pending submission per team and task.
        Index(
            "uq_submissions_pending",
            "organization_id",
            "team_id",
            "task_id",
            unique=True,
            sqlite_where=sql("state = 'Pending'"),
            postgresql_where=sql("state = 'Pending'"),
        ),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    team_id: Mapped[uuid.UUID]
    task_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("tasks.id", ondelete="CASCADE"), index=True
    )
    """A task removed from its discipline takes its submissions with it: there is
    nothing left to review."""
    discipline_id: Mapped[uuid.UUID]
    member_id: Mapped[uuid.UUID]
    """The member who submitted (no foreign key: a member who leaves keeps the record)."""
    text: Mapped[str | None] = mapped_column(Text, default=None)
    url: Mapped[str | None] = mapped_column(String(MAX_URL), default=None)
    state: Mapped[SubmissionState] = mapped_column(
        text_enum(SubmissionState),
        default=SubmissionState.PENDING,
    )
    submitted_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    decided_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, default=None)
    decided_by: Mapped[str | None] = mapped_column(String(MAX_SUBJECT), default=None)
    """The subject of the admin who approved or rejected it."""
    comment: Mapped[str | None] = mapped_column(Text, default=None)

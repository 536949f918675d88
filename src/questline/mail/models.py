"""The mail outbox: one row per e-mail to send, written in the transaction that asks for it.

A row holds no secret: the one-time sign-in code is minted by the sender just before the
message goes out (a leaked database, or an outbox row read by an operator, signs nobody
in), and a request for a sign-in link stores the address as typed: whether it belongs to
a member is decided by the sender, never by the request (no membership oracle).
"""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from typing import Any

from sqlalchemy import JSON, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, text_enum, utcnow


class MailKind(enum.StrEnum):
    SIGNIN_LINK = "signin_link"
    """Asked for at ``POST /auth/signin-link``: sent only when the address is a member's."""
    INVITE = "invite"
    """An admin's invitation of a member (``POST /member/{id}/invite``, ``Invite: true``)."""
    NOTICE = "notice"
    """News for a member (a submission decided): ``content`` holds what it says; it
    carries no sign-in link."""


class MailStatus(enum.StrEnum):
    PENDING = "Pending"
    """Waiting for its first attempt or a retry (``next_attempt_at``)."""
    SENT = "Sent"
    """The SMTP server accepted it."""
    SKIPPED = "Skipped"
    """Nobody to send it to: the address is no member's (or the member was deleted)."""
    FAILED = "Failed"
    """Every attempt failed, or the server refused it for good."""


class MailJob(Base):
    __tablename__ = "mail_outbox"
    __table_args__ = (
        # The sender claims due messages, oldest due first.
        Index("ix_mail_outbox_due", "status", "next_attempt_at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    """No foreign key: a sign-in link may be asked for an organization that does not
    exist (the answer must not tell)."""
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    kind: Mapped[MailKind] = mapped_column(text_enum(MailKind))
    email: Mapped[str] = mapped_column(String(320))
    """Sign-in link: the address as asked for; invitation: the member's at queueing."""
    member_id: Mapped[uuid.UUID | None]
    """Invitation: the member invited; notice: the member told."""
    content: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    """A notice's ``Subject``, ``Text`` and ``Path`` (the dashboard page its link opens):
    what the domain that queued it wants said, nothing secret."""
    status: Mapped[MailStatus] = mapped_column(
        text_enum(MailStatus),
        default=MailStatus.PENDING,
    )
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)

"""``audit_entries``: the append-only audit log.

Rows are only ever inserted (in the transaction of the change they describe) and
deleted by the retention purge; no route updates or deletes one.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, utcnow

PLATFORM_ORG = uuid.UUID(int=0)
"""The organization of changes outside every organization (global disciplines): no
organization's ``GET /audit`` shows them; the operators' own log."""


class AuditEntry(Base):
    __tablename__ = "audit_entries"
    __table_args__ = (
        # GET /audit: an organization's entries, newest first, and each filter's range.
        Index("ix_audit_entries_org_at", "organization_id", "at", "id"),
        Index("ix_audit_entries_org_actor", "organization_id", "actor", "at"),
        Index("ix_audit_entries_org_action", "organization_id", "action", "at"),
        Index("ix_audit_entries_org_target", "organization_id", "target_id", "at"),
        # The retention purge, across organizations.
        Index("ix_audit_entries_at", "at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    """No foreign key: global changes carry ``PLATFORM_ORG``; entries outlive nothing
    they describe (a deleted team's entries stay)."""
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    actor: Mapped[str] = mapped_column(String(255))
    """The caller's subject (``system`` for changes made without a request)."""
    actor_role: Mapped[str | None] = mapped_column(String(16))
    actor_via: Mapped[str] = mapped_column(String(16))
    """How the caller proved who it is: token, session, provider, system."""
    action: Mapped[str] = mapped_column(String(64))
    target_type: Mapped[str] = mapped_column(String(32))
    target_id: Mapped[str | None] = mapped_column(String(64))
    request_id: Mapped[str | None] = mapped_column(String(64))
    changes: Mapped[dict[str, Any]] = mapped_column(JSON)
    """``{field: {"Before": …, "After": …}}`` — never a secret."""

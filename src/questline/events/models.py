"""The outbox table: one row per change, written in the change's own transaction."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, utcnow

PLATFORM_ORG = uuid.UUID(int=0)
"""The organization of events about global disciplines: every organization sees them."""


class Event(Base):
    __tablename__ = "events"
    __table_args__ = (
        # The dispatcher reads the events not yet fanned out to webhooks, oldest first.
        Index("ix_events_dispatch", "pending", "id"),
        Index("ix_events_created_at", "created_at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    """No foreign key: events of global disciplines carry ``PLATFORM_ORG``."""
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    type: Mapped[str] = mapped_column(String(64))
    payload: Mapped[Any] = mapped_column(JSON)
    """The resource as the API returns it (the webhook body's ``data``)."""
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    pending: Mapped[bool] = mapped_column(default=True)
    """Not yet fanned out into webhook deliveries."""

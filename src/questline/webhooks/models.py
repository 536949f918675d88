"""Webhook subscriptions and their deliveries (one row per event and webhook)."""

from __future__ import annotations

import datetime as dt
import enum
import uuid

from sqlalchemy import JSON, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, tenant_foreign_key, text_enum, utcnow


class DeliveryStatus(enum.StrEnum):
    PENDING = "Pending"
    """Waiting for its first attempt or a retry (``NextAttemptAt``)."""
    SUCCEEDED = "Succeeded"
    """The receiver answered 2xx."""
    FAILED = "Failed"
    """Every attempt failed, or the webhook was disabled; ``retry`` sends it again."""


class Webhook(Base):
    __tablename__ = "webhooks"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(JSON)
    description: Mapped[str | None] = mapped_column(String(500))
    enabled: Mapped[bool] = mapped_column(default=True)
    disabled_reason: Mapped[str | None] = mapped_column(String(500))
    secret: Mapped[str] = mapped_column(String(255))
    """Sealed (``storage.sealing``); a value written before sealing is read as is and
    sealed on the next write of the webhook."""
    previous_secret: Mapped[str | None] = mapped_column(String(255))
    previous_secret_expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    failing_since: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    """The first failed attempt since the last success (disables after a while)."""
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        tenant_foreign_key("webhook_id", "webhooks"),
        # The dispatcher claims due deliveries, oldest due first.
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        # A webhook's deliveries, newest first (the paged list).
        Index("ix_webhook_deliveries_webhook", "organization_id", "webhook_id", "id"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    webhook_id: Mapped[uuid.UUID]
    event_id: Mapped[uuid.UUID]
    """The ``webhook-id`` of every attempt is ``msg_`` + this (the same on retries)."""
    event_type: Mapped[str] = mapped_column(String(64))
    status: Mapped[DeliveryStatus] = mapped_column(text_enum(DeliveryStatus))
    attempts: Mapped[int] = mapped_column(default=0)
    generation: Mapped[int] = mapped_column(default=0, server_default="0")
    """Bumped by every manual retry: an attempt claimed under an older generation does
    not record its result over the retry (the row stays due)."""
    next_attempt_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    last_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    last_status_code: Mapped[int | None]
    last_error: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)

"""The ``seasons`` table: an organization's time-boxed competitions."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, utcnow


class Season(Base):
    """A window ``[starts_at, ends_at)`` of completions, optionally frozen for members
    from ``freezes_at`` until ``ends_at`` or ``revealed_at``."""

    __tablename__ = "seasons"
    __table_args__ = (
        # The organization's seasons, in start order (the list).
        Index("ix_seasons_start", "organization_id", "starts_at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100))
    starts_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    ends_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    freezes_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    revealed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    """When an admin ended the freeze early (``POST /season/{id}/reveal``)."""
    discipline_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("disciplines.id", ondelete="SET NULL")
    )
    """The discipline the season ranks by default (null: every discipline)."""
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)

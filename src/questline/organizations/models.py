from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, utcnow


class Organization(Base):
    __tablename__ = "organizations"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    name: Mapped[str | None] = mapped_column(String(100))
    """Shown to people (invitations); set by an admin with ``PATCH /organization``."""

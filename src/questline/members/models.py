from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, utcnow


class Member(Base):
    __tablename__ = "members"
    __table_args__ = (UniqueConstraint("organization_id", "email_key"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    email: Mapped[str] = mapped_column(String(320))
    email_key: Mapped[str] = mapped_column(String(320))
    """The e-mail address lower-cased: unique per organization."""
    given_name: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)

"""The dashboard's sign-in tables: one-time sign-in codes and cookie sessions.

Neither table keeps a secret in the clear: a code and a session id are stored as their
SHA-256 (a leaked database does not sign anyone in). No foreign key to organizations:
a code may be minted before its organization's first request creates the row.
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime


class SigninCode(Base):
    __tablename__ = "signin_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    organization_id: Mapped[uuid.UUID]
    role: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(String(200))
    email: Mapped[str | None] = mapped_column(String(320))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)


class DashboardSession(Base):
    __tablename__ = "dashboard_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    organization_id: Mapped[uuid.UUID]
    role: Mapped[str] = mapped_column(String(16))
    subject: Mapped[str] = mapped_column(String(200))
    email: Mapped[str | None] = mapped_column(String(320))
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)

"""Single sign-on tables: an organization's provider, logins under way, SSO sessions.

Nothing here signs anyone in if the database leaks: the client secret is sealed with a
key derived from the service's signing secret (``sealing``), and a login's ``state``
and a session's cookie are stored as their SHA-256.
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import JSON, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, utcnow


class SsoConfiguration(Base):
    """One OpenID provider per organization (``PUT /organization/sso``)."""

    __tablename__ = "sso_configurations"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    issuer: Mapped[str] = mapped_column(String(2048))
    client_id: Mapped[str] = mapped_column(String(255))
    client_secret_sealed: Mapped[str] = mapped_column(Text)
    """The client secret, Fernet-encrypted (never returned, logged or exported)."""
    admin_groups: Mapped[list[str]] = mapped_column(JSON)
    groups_claim: Mapped[str] = mapped_column(String(100))
    allowed_email_domains: Mapped[list[str]] = mapped_column(JSON)
    enabled: Mapped[bool] = mapped_column(default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class OidcLoginState(Base):
    """A login sent to the provider and not back yet: spent by its callback (once).

    In the database, not in a process, so that the callback may reach any process."""

    __tablename__ = "oidc_login_states"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    organization_id: Mapped[uuid.UUID]
    browser_hash: Mapped[str] = mapped_column(String(64))
    """SHA-256 of the login cookie set on the browser that started the login: a
    callback carried to another browser (login CSRF) does not match."""
    nonce: Mapped[str] = mapped_column(String(100))
    code_verifier: Mapped[str] = mapped_column(String(128))
    next_path: Mapped[str] = mapped_column(String(2048))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)


class SsoSession(Base):
    """A dashboard session that single sign-on started (for RP-initiated logout)."""

    __tablename__ = "sso_sessions"

    session_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    """The ``id_hash`` of the dashboard session (``auth.models.DashboardSession``)."""
    organization_id: Mapped[uuid.UUID]
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)

"""LTI 1.3 tables: the platforms an organization registered and their deployments,
the tool's own signing keys, logins under way and deep-linking choices not yet made.

Nothing here signs anyone in if the database leaks: a login's ``state`` and a deep
link's ticket are stored as their SHA-256, the tool's private keys sealed with a key
derived from the service's signing secret (``keys``).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, tenant_foreign_key, utcnow


class LtiPlatform(Base):
    """``POST /lti/platform``: a learning platform (Moodle, Canvas…) that launches
    Questline for the organization."""

    __tablename__ = "lti_platforms"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    issuer: Mapped[str] = mapped_column(String(2048))
    client_id: Mapped[str] = mapped_column(String(255))
    auth_login_url: Mapped[str] = mapped_column(String(2048))
    auth_token_url: Mapped[str] = mapped_column(String(2048))
    key_set_url: Mapped[str] = mapped_column(String(2048))
    frame_origins: Mapped[list[str] | None] = mapped_column(JSON, default=None)
    """Origins besides the issuer's and the login URL's whose pages may frame
    Questline after a launch (``FrameOrigins``: Canvas posts from the school's domain)."""
    context_title: Mapped[str | None] = mapped_column(String(500), default=None)
    """The title of the course (``context`` claim) of the latest launch."""
    context_id: Mapped[str | None] = mapped_column(String(255), default=None)
    memberships_url: Mapped[str | None] = mapped_column(String(2048), default=None)
    """The NRPS ``context_memberships_url`` of the latest launch that carried it."""
    lineitems_url: Mapped[str | None] = mapped_column(String(2048), default=None)
    """The AGS ``lineitems`` URL of the latest launch that carried it."""
    last_sync_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class LtiDeployment(Base):
    """A deployment id of a platform. ``(issuer, client_id, deployment_id)`` names one
    installation of the tool across every organization: a launch finds its organization
    by it, so it is unique service-wide."""

    __tablename__ = "lti_deployments"
    __table_args__ = (
        tenant_foreign_key("platform_id", "lti_platforms"),
        UniqueConstraint("issuer", "client_id", "deployment_id"),
        Index("ix_lti_deployments_platform", "organization_id", "platform_id"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    platform_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    deployment_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    issuer: Mapped[str] = mapped_column(String(2048))
    client_id: Mapped[str] = mapped_column(String(255))


class LtiToolKey(Base):
    """Questline's own RSA key pairs (``GET /.well-known/jwks.json``): the newest signs,
    the one before stays published until the next rotation."""

    __tablename__ = "lti_tool_keys"

    generation: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    kid: Mapped[str] = mapped_column(String(64), unique=True)
    public_jwk: Mapped[Any] = mapped_column(JSON)
    private_sealed: Mapped[str] = mapped_column(String(8000))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)


class LtiLoginState(Base):
    """A third-party initiated login sent to the platform and not launched yet: spent
    by its launch, once. In the database so that the launch may reach any process."""

    __tablename__ = "lti_login_states"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    issuer: Mapped[str] = mapped_column(String(2048))
    client_id: Mapped[str] = mapped_column(String(255))
    organization_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    platform_id: Mapped[uuid.UUID | None] = mapped_column(default=None)
    """The registration the login named unambiguously (its deployment id, or the only
    registration of the issuer and client id): the launch must be that registration's.
    None when several organizations share the issuer and client id and the login named
    no deployment: the launch's deployment then picks the registration."""
    browser_hash: Mapped[str] = mapped_column(String(64))
    """The SHA-256 of the login cookie's value: the launch must come from this browser."""
    nonce: Mapped[str] = mapped_column(String(100))
    target_link_uri: Mapped[str] = mapped_column(String(2048))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)


class LtiDeepLink(Base):
    """A deep-linking request waiting for the instructor's choice: the ticket in the
    picker's form spends it, once."""

    __tablename__ = "lti_deep_links"

    ticket_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    organization_id: Mapped[uuid.UUID]
    platform_id: Mapped[uuid.UUID]
    deployment_id: Mapped[str] = mapped_column(String(255))
    return_url: Mapped[str] = mapped_column(String(2048))
    data: Mapped[str | None] = mapped_column(String(2048))
    frame_origin: Mapped[str] = mapped_column(String(300))
    """Who may frame the picker's answer (the launch's origin)."""
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)


class LtiPerson(Base):
    """A platform user (``sub``) and the member it is in the organization: found by it
    on later launches and roster syncs (a person without an e-mail address has only it)."""

    __tablename__ = "lti_people"
    __table_args__ = (
        tenant_foreign_key("platform_id", "lti_platforms"),
        tenant_foreign_key("member_id", "members"),
        Index("ix_lti_people_member", "organization_id", "member_id"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    platform_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    subject: Mapped[str] = mapped_column(String(255), primary_key=True)
    member_id: Mapped[uuid.UUID]
    roster_deactivated: Mapped[bool] = mapped_column(default=False)
    """The roster deactivated the member (gone from the course): a later roster or
    launch that lists it again reactivates it. A member the directory (SCIM)
    deactivated stays deactivated whatever the platform says."""
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class LtiLineItem(Base):
    """A discipline's line item in a platform's gradebook (AGS), made on its first score."""

    __tablename__ = "lti_line_items"
    __table_args__ = (tenant_foreign_key("platform_id", "lti_platforms"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    platform_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    discipline_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    url: Mapped[str] = mapped_column(String(2048))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


SCORE_PENDING, SCORE_SENT, SCORE_FAILED = "Pending", "Sent", "Failed"
"""The statuses of an ``LtiScore``."""


class LtiScore(Base):
    """The score a platform user has to get in a discipline's line item: one row per
    person and discipline, holding the latest value (a newer progress change rewrites it
    and makes it due again), sent by the grades dispatcher (``grades_dispatcher``) like the
    outbox's other deliveries."""

    __tablename__ = "lti_scores"
    __table_args__ = (
        tenant_foreign_key("platform_id", "lti_platforms"),
        Index("ix_lti_scores_due", "status", "next_attempt_at"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    platform_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    discipline_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    subject: Mapped[str] = mapped_column(String(255), primary_key=True)
    """The platform's user id (``userId`` of the score)."""
    score_given: Mapped[int]
    score_maximum: Mapped[int]
    label: Mapped[str] = mapped_column(String(500))
    """The discipline's title (the line item's label)."""
    status: Mapped[str] = mapped_column(String(16))
    """``Pending``, ``Sent`` or ``Failed``."""
    version: Mapped[int] = mapped_column(default=1)
    """Bumped by every rewrite: an attempt that sent an older value leaves it due."""
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    last_status_code: Mapped[int | None] = mapped_column(default=None)
    last_error: Mapped[str | None] = mapped_column(String(1000), default=None)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)

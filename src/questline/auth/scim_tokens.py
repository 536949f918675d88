"""A directory's SCIM tokens: opaque bearer secrets stored by id, each revocable.

A token is ``qlscim_`` followed by 43 random URL-safe characters; only its SHA-256 is
stored (a leaked database provisions nothing). The row, and nothing the caller sends,
decides the organization the token acts in. A token is refused (401) once revoked,
once past its ``expires_at``, or when no row has its digest. Revocation takes effect on
the next request: a verified token is not remembered between requests.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import ForeignKey, Index, String, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from questline.organizations.service import ensure_organization
from questline.storage.db import Base, UTCDateTime, new_id, utcnow
from questline.storage.tenancy import finds_the_organization
from questline.web.identity import Caller, Role, Via

PREFIX = "qlscim_"
"""What a SCIM token starts with: secret scanners and the authentication tell it from a
JWT by it."""
MAX_LABEL = 100
LAST_USED_PRECISION = dt.timedelta(minutes=1)
"""``last_used_at`` is written at most this often per token: a directory's sync sends a
request per user, and a write per request would contend with its own provisioning."""


class ScimTokenRecord(Base):
    __tablename__ = "scim_tokens"
    __table_args__ = (Index("ix_scim_tokens_org_created", "organization_id", "created_at"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    """SHA-256 (hex) of the whole token."""
    label: Mapped[str] = mapped_column(String(MAX_LABEL))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, default=None)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, default=None)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_scim_token(token: str) -> bool:
    return token.startswith(PREFIX)


@dataclass(frozen=True, slots=True)
class Issued:
    """A new token: the secret (shown once, never stored) and its row."""

    token: str
    record: ScimTokenRecord


async def issue(
    session: AsyncSession, *, org_id: uuid.UUID, label: str, lifetime: dt.timedelta
) -> Issued:
    """A new SCIM token for ``org_id`` (its organization row created on first sight)."""
    await ensure_organization(session, org_id)
    token = PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    record = ScimTokenRecord(
        organization_id=org_id,
        id=new_id(),
        secret_hash=digest(token),
        label=label[:MAX_LABEL],
        created_at=now,
        expires_at=now + lifetime,
    )
    session.add(record)
    await session.flush()
    return Issued(token=token, record=record)


async def list_tokens(session: AsyncSession, *, org_id: uuid.UUID) -> list[ScimTokenRecord]:
    """The organization's tokens, newest first (revoked and expired ones too)."""
    rows = await session.scalars(
        select(ScimTokenRecord)
        .where(ScimTokenRecord.organization_id == org_id)
        .order_by(ScimTokenRecord.created_at.desc(), ScimTokenRecord.id.desc())
    )
    return list(rows)


async def directory_manages(session: AsyncSession, *, org_id: uuid.UUID) -> bool:
    """Whether a directory provisions the organization's members: it holds a SCIM token
    that is neither revoked nor expired. Such an organization's members are the
    directory's to create and delete; an identity provider then signs in only members
    the directory made (a member it deleted does not come back as a new one)."""
    live = await session.scalar(
        select(ScimTokenRecord.id)
        .where(
            ScimTokenRecord.organization_id == org_id,
            ScimTokenRecord.revoked_at.is_(None),
            ScimTokenRecord.expires_at > utcnow(),
        )
        .limit(1)
    )
    return live is not None


async def get_token(
    session: AsyncSession, *, org_id: uuid.UUID, token_id: uuid.UUID
) -> ScimTokenRecord | None:
    """The organization's token ``token_id`` (None for another organization's)."""
    return await session.scalar(
        select(ScimTokenRecord)
        .where(ScimTokenRecord.organization_id == org_id, ScimTokenRecord.id == token_id)
        .with_for_update()
    )


async def revoke(session: AsyncSession, record: ScimTokenRecord) -> bool:
    """Revoke ``record``; False when it was revoked already (nothing changes)."""
    if record.revoked_at is not None:
        return False
    record.revoked_at = utcnow()
    await session.flush()
    return True


Status = Literal["active", "revoked", "expired"]


def status_of(record: ScimTokenRecord, now: dt.datetime | None = None) -> Status:
    if record.revoked_at is not None:
        return "revoked"
    if record.expires_at <= (now or utcnow()):
        return "expired"
    return "active"


@finds_the_organization
async def find_live(session: AsyncSession, token: str) -> ScimTokenRecord | None:
    """The row of a token that is neither revoked nor expired, else None."""
    record = await session.scalar(
        select(ScimTokenRecord).where(ScimTokenRecord.secret_hash == digest(token))
    )
    if record is None or status_of(record) != "active":
        return None
    return record


def caller_of(record: ScimTokenRecord) -> Caller:
    return Caller(
        subject=f"scim-token:{record.id}",
        role=Role.SCIM,
        org_id=record.organization_id,
        email=None,
        via=Via.SCIM,
    )


def needs_touch(record: ScimTokenRecord, now: dt.datetime | None = None) -> bool:
    last = record.last_used_at
    return last is None or (now or utcnow()) - last >= LAST_USED_PRECISION


async def touch(session: AsyncSession, record: ScimTokenRecord) -> None:
    """Record that the token was used now (``needs_touch`` decides when)."""
    await session.execute(
        update(ScimTokenRecord)
        .where(
            ScimTokenRecord.organization_id == record.organization_id,
            ScimTokenRecord.id == record.id,
        )
        .values(last_used_at=utcnow())
    )

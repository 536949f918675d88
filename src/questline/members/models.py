from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import (
    JSON,
    ColumnElement,
    ForeignKey,
    Index,
    String,
    UniqueConstraint,
    and_,
)
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, tenant_foreign_key, utcnow


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
    active: Mapped[bool | None] = mapped_column(default=None)
    """False once the organization's directory deactivated the member (SCIM ``active``):
    it cannot sign in and is in no team; its teams keep their progress and history.
    True when the directory said so; null (active) when nobody set it."""
    external_id: Mapped[str | None] = mapped_column(String(255), default=None)
    """The directory's own id for the member (SCIM ``externalId``), as it sent it."""
    user_name: Mapped[str | None] = mapped_column(String(320), default=None)
    """The directory's ``userName`` when it is not the e-mail address (null: it is)."""
    updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, default=None)
    """When the directory last changed the member (SCIM ``meta.lastModified``)."""
    directory_emails: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, default=None)
    """The e-mail entries the directory sent (SCIM ``emails``: ``value``, ``type``,
    ``primary``), in its order; ``email`` is the primary one's (or the first's). Null
    when no directory set any."""


class TeamMembership(Base):
    """A member's place in a team. Kept with the members: a member's teams are read here,
    and the teams package, which builds on this one, adds and removes them."""

    __tablename__ = "team_members"
    __table_args__ = (
        tenant_foreign_key("team_id", "teams"),
        tenant_foreign_key("member_id", "members"),
        Index("ix_team_members_member", "organization_id", "member_id"),
    )

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    team_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    member_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


def membership_of_member() -> ColumnElement[bool]:
    """Join condition of a team membership and its member: the same organization and
    member id, the composite key the foreign key (and row-level security) go by."""
    return and_(
        TeamMembership.organization_id == Member.organization_id,
        TeamMembership.member_id == Member.id,
    )

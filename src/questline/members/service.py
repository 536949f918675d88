"""Members: find-or-create by e-mail, list with the teams each belongs to."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit
from questline.members import schemas
from questline.members.models import Member, TeamMembership, membership_of_member
from questline.storage.db import insert_ignoring_conflicts, new_id, utcnow
from questline.web.pagination import PageRequest, cursor_parts
from questline.web.schemas import shown_row


@dataclass(frozen=True, slots=True)
class FoundMember:
    member: Member
    created: bool


def as_seen_by(viewer: _Viewer, members: list[schemas.Member]) -> list[schemas.Member]:
    """What a caller may see of members: admins everything; members names, not e-mails."""
    if viewer.is_admin:
        return members
    return [member.model_copy(update={"email": None}) for member in members]


class _Viewer(Protocol):
    @property
    def is_admin(self) -> bool: ...


def email_key(email: str) -> str:
    return email.strip().casefold()


async def find_or_create(
    session: AsyncSession, *, org_id: uuid.UUID, email: str, given_name: str
) -> FoundMember:
    """The member with this e-mail (any case), created if new; safe under concurrency."""
    key = email_key(email)
    member_id = new_id()
    result = await session.execute(
        insert_ignoring_conflicts(session, Member.__table__, ["organization_id", "email_key"])
        .values(
            organization_id=org_id,
            id=member_id,
            email=email.strip(),
            email_key=key,
            given_name=given_name,
            created_at=utcnow(),
        )
        .returning(Member.__table__.c.id)
    )
    created = result.scalar_one_or_none() is not None
    member = await find_by_email(session, org_id=org_id, email=email)
    assert member is not None, "a member row exists after insert-or-ignore"
    return FoundMember(member=member, created=created)


async def audit_created(session: AsyncSession, member: Member, **more: object) -> None:
    """The ``member.created`` entry of a member made on the way (a team's new member by
    e-mail, a sign-in through a provider or an LTI launch): its e-mail and name, and
    ``more`` of how it came."""
    after = {"Email": member.email, "GivenName": member.given_name, **more}
    await audit.record_on(session, "member", member, "member.created", after=after)


async def find_by_email(session: AsyncSession, *, org_id: uuid.UUID, email: str) -> Member | None:
    """The organization's member with this e-mail (any case), or None."""
    return await session.scalar(
        select(Member).where(Member.organization_id == org_id, Member.email_key == email_key(email))
    )


async def missing_member_ids(
    session: AsyncSession, *, org_id: uuid.UUID, member_ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """The ids in ``member_ids`` that name no member of the organization, in given order."""
    if not member_ids:
        return []
    found = set(
        await session.scalars(
            select(Member.id).where(Member.organization_id == org_id, Member.id.in_(member_ids))
        )
    )
    return [member_id for member_id in dict.fromkeys(member_ids) if member_id not in found]


async def team_ids_of(
    session: AsyncSession, *, org_id: uuid.UUID, member_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Each member's team ids, in one query for all of them."""
    teams: dict[uuid.UUID, list[uuid.UUID]] = defaultdict(list)
    if not member_ids:
        return teams
    rows = await session.execute(
        select(TeamMembership.member_id, TeamMembership.team_id)
        .where(
            TeamMembership.organization_id == org_id,
            TeamMembership.member_id.in_(member_ids),
        )
        .order_by(TeamMembership.member_id, TeamMembership.team_id)
    )
    for member_id, team_id in rows:
        teams[member_id].append(team_id)
    return teams


async def describe(
    session: AsyncSession, *, org_id: uuid.UUID, members: Sequence[Member]
) -> list[schemas.Member]:
    teams = await team_ids_of(session, org_id=org_id, member_ids=[m.id for m in members])
    return [shown_row(schemas.Member, m, team_ids=teams.get(m.id, [])) for m in members]


async def list_members(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    page: PageRequest,
    team_id: uuid.UUID | None = None,
) -> list[Member]:
    """Members by e-mail, optionally only one team's; keyset-paged on (email_key, id)."""
    query = select(Member).where(Member.organization_id == org_id)
    if team_id is not None:
        query = query.join(TeamMembership, membership_of_member())
        query = query.where(TeamMembership.team_id == team_id)
    if page.after is not None:
        email_after, id_after = cursor_parts(page.after, str, uuid.UUID)
        query = query.where(tuple_(Member.email_key, Member.id) > (email_after, id_after))
    query = query.order_by(Member.email_key, Member.id)
    if page.fetch_size is not None:
        query = query.limit(page.fetch_size)
    return list(await session.scalars(query))


def cursor_of(member: Member) -> list[str]:
    return [member.email_key, str(member.id)]


ALL = PageRequest(limit=None, after=None)
"""Every row, unpaged."""


async def get_member(session: AsyncSession, *, org_id: uuid.UUID, member_id: uuid.UUID) -> Member:
    from questline.web.errors import not_found

    member = await session.scalar(
        select(Member).where(Member.organization_id == org_id, Member.id == member_id)
    )
    if member is None:
        raise not_found("member")
    return member


async def is_deactivated(session: AsyncSession, *, org_id: uuid.UUID, email: str) -> bool:
    """Whether the organization's directory deactivated the member with this e-mail
    (SCIM ``active: false``): such a member does not sign in."""
    active = await session.scalar(
        select(Member.active).where(
            Member.organization_id == org_id, Member.email_key == email_key(email)
        )
    )
    return active is False

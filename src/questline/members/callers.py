"""The caller's member: who, among the organization's members, the caller is — and the
rule for acting on a team as one of its members.

A caller names a member by its e-mail (the dashboard session's, or the bearer token's
``email`` claim), or, for tokens minted without one, by its subject (the token's ``sub``)
being the member's e-mail or id. E-mail addresses are compared ignoring case. A member
the directory deactivated (SCIM ``active: false``) is no caller's member.

Whoever acts on a team (answers, marks a task done, unlocks a hint, submits work) must be
one of the team's members, or an admin: a member caller with no member, or whose member
is not in the team, is refused (403). The team itself is looked up first by the caller of
``acting_member`` (404 for another organization's).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import ColumnElement, exists, false, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.members.models import Member, TeamMembership
from questline.web.errors import Forbidden
from questline.web.identity import Caller, Role

NO_MEMBER = (
    "Your sign-in names no member of this organization (a token needs the member's "
    "e-mail as its `email` claim); only a team's members or an admin may do this."
)
NOT_IN_TEAM = "Only the team's members (or an admin) may do this."


def _as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def identity_matches(caller: Caller) -> ColumnElement[bool]:
    """Members the caller's identity names (its e-mail, or its subject as e-mail or id)."""
    keys = {value.strip().lower() for value in (caller.email, caller.subject) if value}
    names: list[ColumnElement[bool]] = [Member.email_key.in_(sorted(keys))]
    as_id = _as_uuid(caller.subject)
    if as_id is not None:
        names.append(Member.id == as_id)
    return or_(*names)


def _rank(caller: Caller, email_key: str, in_team: bool) -> tuple[bool, bool]:
    """Which of several named members is the caller's: one in the team, then the one
    its e-mail names."""
    by_email = caller.email is not None and email_key == caller.email.strip().lower()
    return (not in_team, not by_email)


@dataclass(frozen=True, slots=True)
class Acting:
    """The caller's member (if any) and whether it is in the team."""

    member_id: uuid.UUID | None
    in_team: bool


async def _named(session: AsyncSession, *, caller: Caller, team_id: uuid.UUID | None) -> Acting:
    if caller.org_id is None:
        return Acting(None, False)
    in_team: ColumnElement[bool] = (
        exists()
        .where(
            TeamMembership.organization_id == Member.organization_id,
            TeamMembership.team_id == team_id,
            TeamMembership.member_id == Member.id,
        )
        .correlate(Member)
        if team_id is not None
        else false()
    )
    query = select(Member.id, Member.email_key, in_team).where(
        Member.organization_id == caller.org_id,
        identity_matches(caller),
        Member.active.is_not(False),
    )
    rows = (await session.execute(query)).all()
    if not rows:
        return Acting(None, False)
    best = min(rows, key=lambda row: _rank(caller, row[1], bool(row[2])))
    return Acting(best[0], bool(best[2]))


async def caller_member(session: AsyncSession, *, caller: Caller) -> uuid.UUID | None:
    """The id of the organization's member the caller is, or None."""
    return (await _named(session, caller=caller, team_id=None)).member_id


async def acting_member(
    session: AsyncSession, *, caller: Caller, team_id: uuid.UUID
) -> uuid.UUID | None:
    """The member a learner's action on the team is attributed to.

    A member caller: its member, which must be one of the team's (else 403). An admin:
    its member when that is one of the team's, else None (an admin acts as itself).
    """
    acting = await _named(session, caller=caller, team_id=team_id)
    if caller.role is Role.ADMIN:
        return acting.member_id if acting.in_team else None
    if caller.role is not Role.MEMBER:
        raise Forbidden(NOT_IN_TEAM)
    if acting.member_id is None:
        raise Forbidden(NO_MEMBER)
    if not acting.in_team:
        raise Forbidden(NOT_IN_TEAM)
    return acting.member_id

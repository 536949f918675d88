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

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, exists, or_, select
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


def names_of(caller: Caller) -> tuple[list[str], uuid.UUID | None]:
    """What names the caller's member: the e-mail keys of its e-mail and of its subject,
    and its subject as a member id (when it is one)."""
    keys = {value.strip().lower() for value in (caller.email, caller.subject) if value}
    return sorted(keys), _as_uuid(caller.subject)


def identity_matches(caller: Caller) -> ColumnElement[bool]:
    """Members the caller's identity names (its e-mail, or its subject as e-mail or id)."""
    keys, as_id = names_of(caller)
    names: list[ColumnElement[bool]] = [Member.email_key.in_(keys)]
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


@functools.cache
def named_members() -> Select[uuid.UUID, str, bool]:
    """The members a caller's identity names (id, e-mail key, whether in the team), for
    ``best_named``; built once (composing it cost more than running it), its values
    from ``named_values``. A statement of its own, or part of a caller's larger
    look-up."""
    in_team = (
        exists()
        .where(
            TeamMembership.organization_id == Member.organization_id,
            TeamMembership.team_id == bindparam("named_team"),
            TeamMembership.member_id == Member.id,
        )
        .correlate(Member)
    )
    names = or_(
        Member.email_key.in_(bindparam("named_keys", expanding=True)),
        Member.id == bindparam("named_id"),
    )
    return select(Member.id, Member.email_key, in_team.label("in_team")).where(
        Member.organization_id == bindparam("named_org"),
        names,
        Member.active.is_not(False),
    )


def named_values(caller: Caller, team_id: uuid.UUID | None) -> dict[str, Any]:
    """The values of ``named_members`` for the caller (no team: in none)."""
    keys, as_id = names_of(caller)
    return {
        "named_org": caller.org_id,
        "named_team": team_id,
        "named_keys": keys,
        "named_id": as_id,
    }


def best_named(caller: Caller, rows: Sequence[Sequence[Any]]) -> Acting:
    """The caller's member among the rows of ``named_members`` (none: no member)."""
    if not rows:
        return Acting(None, False)
    best = min(rows, key=lambda row: _rank(caller, row[1], bool(row[2])))
    return Acting(best[0], bool(best[2]))


async def _named(session: AsyncSession, *, caller: Caller, team_id: uuid.UUID | None) -> Acting:
    if caller.org_id is None:
        return Acting(None, False)
    rows = (await session.execute(named_members(), named_values(caller, team_id))).all()
    return best_named(caller, rows)


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
    return acting_as(caller, await _named(session, caller=caller, team_id=team_id))


def acting_as(caller: Caller, acting: Acting) -> uuid.UUID | None:
    """``acting_member``'s rule, given the caller's member as found (``best_named``)."""
    if caller.role is Role.ADMIN:
        return acting.member_id if acting.in_team else None
    if caller.role is not Role.MEMBER:
        raise Forbidden(NOT_IN_TEAM)
    if acting.member_id is None:
        raise Forbidden(NO_MEMBER)
    if not acting.in_team:
        raise Forbidden(NOT_IN_TEAM)
    return acting.member_id

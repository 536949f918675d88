"""Who did what in a team: each member's points and tasks (the overview's
``Contributions``), and whether a caller is one of the team's members — the only
members, with admins, who see them.

A member caller belongs to a team when its identity names one of the team's members:
its e-mail (the dashboard session's, or the token's ``email`` claim) or its subject
(the token's ``sub``) is the member's e-mail (ignoring case), or its subject is the
member's id.
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import Request
from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.members.callers import identity_matches
from questline.members.models import Member, TeamMembership, membership_of_member
from questline.progress.models import TaskCompletion
from questline.readmodel import moved
from questline.readmodel.service import ReadModel
from questline.web.identity import Caller, Role
from questline.web.paths import canonical_uuid

OWN = "member.own"
"""The variant of a team's overview for the team's own members (with contributions)."""


def _memo_name(caller: Caller) -> str:
    return f"teams-of|{caller.subject}|{caller.email or ''}"


async def teams_of(session: AsyncSession, *, org_id: uuid.UUID, caller: Caller) -> frozenset[Any]:
    """The ids of the teams whose members include the caller (``members.callers``)."""
    rows = await session.scalars(
        select(TeamMembership.team_id)
        .join(Member, membership_of_member())
        .where(TeamMembership.organization_id == org_id, identity_matches(caller))
    )
    return frozenset(uuid.UUID(str(team_id)) for team_id in rows.all())


async def variant_in_route(
    session: AsyncSession,
    *,
    readmodel: ReadModel,
    caller: Caller,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
) -> str:
    """The overview's variant for the caller (the route's: it may read the database)."""
    if caller.role is not Role.MEMBER:
        return caller.role.value
    version = await readmodel.version(org_id)

    async def build() -> frozenset[Any]:
        return await teams_of(session, org_id=org_id, caller=caller)

    # Which teams a member belongs to changes only with writes that say nothing.
    teams = await readmodel.memo(
        org_id, _memo_name(caller), -1 if version is None else version, build, moved.NOTHING
    )
    return OWN if team_id in teams else caller.role.value


async def early_variant(
    request: Request, caller: Caller, readmodel: ReadModel, org_id: uuid.UUID
) -> str | None:
    """The overview's variant from what the read model keeps (``CachedRead``'s); None
    when the caller's teams are not known at this version (the route finds them)."""
    if caller.role is not Role.MEMBER:
        return caller.role.value
    version = await readmodel.version(org_id)
    if version is None:
        return None
    teams = readmodel.memo_at(org_id, _memo_name(caller), version)
    team_id = canonical_uuid(str(request.path_params.get("team_id", "")))
    if teams is None or team_id is None:
        return None
    return OWN if team_id in teams else caller.role.value


def sees_contributions(variant: str) -> bool:
    return variant in (OWN, Role.ADMIN.value)


async def contributions(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID
) -> list[dict[str, Any]]:
    """Each member's points and tasks completed in the team (members who left but keep
    credit too), most points first, then by name; then the completions no member was
    named for (``MemberId`` null)."""
    done = TaskCompletion
    credit = {
        (None if row[0] is None else uuid.UUID(str(row[0]))): (int(row[1]), int(row[2]))
        for row in (
            await session.execute(
                select(done.member_id, func.coalesce(func.sum(done.points), 0), func.count())
                .where(done.organization_id == org_id, done.team_id == team_id)
                .group_by(done.member_id)
            )
        ).all()
    }
    current = select(TeamMembership.member_id).where(
        TeamMembership.organization_id == org_id, TeamMembership.team_id == team_id
    )
    credited = [m for m in credit if m is not None]
    people = (
        await session.execute(
            select(Member.id, Member.given_name, Member.email).where(
                Member.organization_id == org_id,
                or_(Member.id.in_(current), Member.id.in_(credited)),
            )
        )
    ).all()
    found: list[dict[str, Any]] = []
    for member_id, given_name, email in people:
        points, tasks = credit.get(uuid.UUID(str(member_id)), (0, 0))
        found.append(
            {
                "MemberId": member_id,
                "GivenName": given_name,
                "Email": email,
                "Points": points,
                "TasksCompleted": tasks,
            }
        )
    found.sort(
        key=lambda c: (-int(c["Points"]), str(c["GivenName"]).casefold(), str(c["MemberId"]))
    )
    points, tasks = credit.get(None, (0, 0))
    found.append(
        {
            "MemberId": None,
            "GivenName": None,
            "Email": None,
            "Points": points,
            "TasksCompleted": tasks,
        }
    )
    return found

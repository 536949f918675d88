"""What submissions need from the learners' rules: the caller's member, a task's check
kind and whether its level is open for the team.

SEAM: the smallest stand-in until the learners' document model and caller's member
land; each function is replaced by a call to theirs at the merge.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.members.models import Member, TeamMembership
from questline.web.identity import Caller


async def caller_member(
    session: AsyncSession, *, org_id: uuid.UUID, caller: Caller
) -> Member | None:
    """The organization's member whose e-mail is the caller's (the session's, or the
    token's ``email`` claim), ignoring case; ``None`` when there is none."""
    if not caller.email:
        return None
    found: Member | None = await session.scalar(
        select(Member).where(
            Member.organization_id == org_id, Member.email_key == caller.email.strip().lower()
        )
    )
    return found


async def is_member_of(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, member_id: uuid.UUID
) -> bool:
    found = await session.scalar(
        select(TeamMembership.member_id).where(
            TeamMembership.organization_id == org_id,
            TeamMembership.team_id == team_id,
            TeamMembership.member_id == member_id,
        )
    )
    return found is not None


async def check_kind(session: AsyncSession, *, task_id: uuid.UUID) -> str:
    """The task's ``Check.Kind``."""
    del session, task_id
    return "Review"


async def ensure_open(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> None:
    """409 (``locked``) when the task's level is closed for the team."""
    del session, org_id, team_id, task_id

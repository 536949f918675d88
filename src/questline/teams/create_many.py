"""Teams many at a time: set-based reads and writes for bulk creation.

A constant number of statements whatever the number of teams: the bulk path creates up
to 10,000 teams in one request, and a round trip a team would make that take minutes
on a remote PostgreSQL. The writes are ``COPY`` on PostgreSQL and ``executemany`` on
SQLite (``questline.storage.many_rows.write_rows``).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.members.models import TeamMembership
from questline.storage.db import new_id, utcnow
from questline.storage.many_rows import one_of, write_rows
from questline.teams.models import Team, TeamStatus
from questline.teams.service import name_key
from questline.web.schemas import UtcDateTime

_TIMESTAMP: TypeAdapter[Any] = TypeAdapter(UtcDateTime)
"""The API's own timestamp format (``Team.CreatedAt``)."""


@dataclass(frozen=True, slots=True)
class NewTeam:
    name: str
    tags: list[str]
    member_ids: list[uuid.UUID]
    """Distinct ids of members of the organization."""


async def existing_name_keys(
    session: AsyncSession, *, org_id: uuid.UUID, keys: Collection[str]
) -> set[str]:
    """Which of these lower-cased names the organization's teams already use."""
    if not keys:
        return set()
    query = select(Team.name_key).where(
        Team.organization_id == org_id, one_of(session, Team.name_key, sorted(keys))
    )
    return set(await session.scalars(query))


async def insert_teams(
    session: AsyncSession, *, org_id: uuid.UUID, teams: Sequence[NewTeam]
) -> list[dict[str, Any]]:
    """Insert the teams and their memberships; the created teams in the given order, as
    the API writes them (the ``Team`` schema's JSON, wire names: ready for ``orjson``
    and for the outbox without a model a team).

    Two statements whatever the number of teams (``write_rows``: ``COPY`` on PostgreSQL).
    The caller has checked that the names are free and the members exist; a concurrent
    request that took a name meanwhile makes the unique index fail the whole
    transaction (409), never half of it.
    """
    now = utcnow()
    ids = [new_id() for _ in teams]
    await write_rows(
        session,
        Team.__table__,  # type: ignore[arg-type]
        ("id", "name", "name_key", "tags"),
        [
            (team_id, team.name, name_key(team.name), team.tags)
            for team_id, team in zip(ids, teams, strict=True)
        ],
        same={
            "organization_id": org_id,
            "status": TeamStatus.ACTIVE,
            "score": 0,
            "tasks_completed": 0,
            "score_reached_at": now,
            "is_survey_completed": False,
            "is_admin_team": False,
            "is_ranked": True,
            "created_at": now,
            "updated_at": now,
            "version": 1,
        },
    )
    await write_rows(
        session,
        TeamMembership.__table__,  # type: ignore[arg-type]
        ("team_id", "member_id"),
        [
            (team_id, member_id)
            for team_id, team in zip(ids, teams, strict=True)
            for member_id in team.member_ids
        ],
        same={"organization_id": org_id, "created_at": now},
    )
    org, created_at, active = (
        str(org_id),
        _TIMESTAMP.dump_python(now, mode="json"),
        TeamStatus.ACTIVE.value,
    )
    return [
        {
            "Id": str(team_id),
            "Name": team.name,
            "OrganizationId": org,
            "Status": active,
            "Tags": team.tags,
            "Score": 0,
            "IsSurveyCompleted": False,
            "IsAdminTeam": False,
            "MemberCount": len(team.member_ids),
            "CreatedAt": created_at,
        }
        for team_id, team in zip(ids, teams, strict=True)
    ]

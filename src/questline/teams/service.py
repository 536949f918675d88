"""Team rules: creation, changes, membership and the admin flag, and the team they
apply to (``get_team``). Reading teams as JSON: ``teams.queries``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from prometheus_client import Counter
from sqlalchemy import ColumnElement, Subquery, delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit, events
from questline.members import service as members_service
from questline.members.models import Member, TeamMembership
from questline.readmodel.versions import bump
from questline.storage.db import insert_ignoring_conflicts, utcnow
from questline.teams import schemas
from questline.teams.models import Team, TeamStatus
from questline.web.errors import Conflict, FieldError, PreconditionFailed, Unprocessable, not_found
from questline.web.lookups import one_or_not_found
from questline.web.metrics import count_on_commit
from questline.web.schemas import shown_row

TEAMS_CREATED = Counter(
    "questline_teams_created", "Teams created, one by one (POST /team) and in bulk"
)


@dataclass(frozen=True, slots=True)
class TeamWithCount:
    team: Team
    member_count: int


def etag_of(team: Team) -> str:
    return f'"{team.id.hex}.{team.version}"'


def to_schema(team: Team, member_count: int) -> schemas.Team:
    return shown_row(schemas.Team, team, member_count=member_count)


def name_key(name: str) -> str:
    return name.casefold()


def member_count_column() -> ColumnElement[int]:
    """The team's member count, as a correlated subquery served by the primary key."""
    return (
        select(func.count())
        .where(
            TeamMembership.organization_id == Team.organization_id,
            TeamMembership.team_id == Team.id,
        )
        .correlate(Team)
        .scalar_subquery()
    )


def member_counts(org_id: uuid.UUID) -> Subquery:
    """Each team's member count, as one subquery ``(team_id, members)`` grouped over the
    organization's memberships (for a ranking over all of its teams: one pass rather
    than a look-up per team). Teams without members have no row."""
    return (
        select(TeamMembership.team_id, func.count().label("members"))
        .where(TeamMembership.organization_id == org_id)
        .group_by(TeamMembership.team_id)
        .subquery("member_counts")
    )


async def get_team(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, for_update: bool = False
) -> Team:
    """The team, or 404 when it is not in the caller's organization.

    ``for_update`` locks the row (PostgreSQL) so that read-modify-write steps such as
    the admin switch see the latest committed value.
    """
    query = select(Team).where(Team.organization_id == org_id, Team.id == team_id)
    return await one_or_not_found(session, query, kind="team", for_update=for_update)


async def count_members(session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID) -> int:
    count = await session.scalar(
        select(func.count()).where(
            TeamMembership.organization_id == org_id, TeamMembership.team_id == team_id
        )
    )
    return int(count or 0)


async def with_count(session: AsyncSession, team: Team) -> TeamWithCount:
    count = await count_members(session, org_id=team.organization_id, team_id=team.id)
    return TeamWithCount(team, count)


async def _record(session: AsyncSession, team: Team, type: str) -> None:
    """The outbox event of a change of ``team``: the team as the API returns it."""
    count = await count_members(session, org_id=team.organization_id, team_id=team.id)
    await events.record(
        session, organization_id=team.organization_id, type=type, data=to_schema(team, count)
    )


async def _record_membership(
    session: AsyncSession, team: Team, member_id: uuid.UUID, type: str
) -> None:
    """``member.added`` / ``member.removed``: the team's id and the member as returned."""
    member = await members_service.get_member(
        session, org_id=team.organization_id, member_id=member_id
    )
    [described] = await members_service.describe(
        session, org_id=team.organization_id, members=[member]
    )
    data = {"TeamId": team.id, "Member": described}
    await events.record(session, organization_id=team.organization_id, type=type, data=data)


def audited(team: Team) -> dict[str, object]:
    """The fields of a team the audit log compares before and after a change."""
    return {
        "Name": team.name,
        "Tags": list(team.tags),
        "Status": team.status,
        "IsAdminTeam": team.is_admin_team,
        "IsSurveyCompleted": team.is_survey_completed,
    }


async def audit_team(
    session: AsyncSession,
    team: Team,
    action: str,
    before: dict[str, object] | None,
    after: dict[str, object] | None,
) -> None:
    """An audit entry whose target is ``team`` (its rename, its adjustments, its
    directory id): every team-targeted entry is written through here."""
    await audit.record_on(session, "team", team, action, before=before, after=after)


async def _ensure_name_free(
    session: AsyncSession, *, org_id: uuid.UUID, name: str, except_id: uuid.UUID | None = None
) -> None:
    query = select(Team.id).where(Team.organization_id == org_id, Team.name_key == name_key(name))
    if except_id is not None:
        query = query.where(Team.id != except_id)
    if await session.scalar(query) is not None:
        raise Conflict(
            f"A team named {name!r} already exists in your organization (names ignore case)."
        )


async def create_team(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    data: schemas.TeamCreate,
    external_id: str | None = None,
) -> TeamWithCount:
    """A new team (``external_id``: the directory's id of a SCIM group)."""
    member_ids = list(dict.fromkeys(data.members))
    missing = await members_service.missing_member_ids(
        session, org_id=org_id, member_ids=member_ids
    )
    if missing:
        raise Unprocessable(
            "Some member ids name no member of your organization.",
            errors=[
                FieldError(
                    field=f"members[{data.members.index(m)}]", message=f"Unknown member {m}."
                )
                for m in missing
            ],
        )
    await _ensure_name_free(session, org_id=org_id, name=data.name)
    now = utcnow()
    team = Team(
        organization_id=org_id,
        name=data.name,
        name_key=name_key(data.name),
        status=TeamStatus.ACTIVE,
        tags=data.tags,
        score=0,
        score_reached_at=now,
        is_survey_completed=False,
        is_admin_team=False,
        is_ranked=True,
        external_id=external_id,
        created_at=now,
        updated_at=now,
    )
    session.add(team)
    await session.flush()
    if member_ids:
        await session.execute(
            insert(TeamMembership),
            [
                {"organization_id": org_id, "team_id": team.id, "member_id": m, "created_at": now}
                for m in member_ids
            ],
        )
    await _record(session, team, "team.created")
    created = {**audited(team), "Members": member_ids}
    if external_id is not None:
        created["ExternalId"] = external_id
    await audit_team(session, team, "team.created", None, created)
    count_on_commit(session, TEAMS_CREATED)
    await bump(session, org_id)
    return TeamWithCount(team, len(member_ids))


def _resource_part(tag: str) -> str:
    """``"<id>.<version>"`` of an ETag ``GET /team/{id}`` sent as ``"<id>.<version>-<org>"``
    (its body also shows the members, so that validator also carries the organization's
    read-model version; ``If-Match`` compares the team's own part)."""
    if tag.startswith('"') and "-" in tag:
        return tag.split("-", 1)[0] + '"'
    return tag


def check_if_match(team: Team, if_match: str | None) -> None:
    if if_match is None:
        return
    tags = [_resource_part(t.strip().removeprefix("W/")) for t in if_match.split(",")]
    if "*" not in tags and etag_of(team) not in tags:
        raise PreconditionFailed(
            "The team changed since you read it (If-Match does not match its ETag); "
            "read it again and retry."
        )


async def update_team(
    session: AsyncSession, *, team: Team, data: schemas.TeamUpdate, if_match: str | None
) -> Team:
    check_if_match(team, if_match)
    before = audited(team)
    if data.name is not None and data.name != team.name:
        await _ensure_name_free(
            session, org_id=team.organization_id, name=data.name, except_id=team.id
        )
        team.name = data.name
        team.name_key = name_key(data.name)
    if data.tags is not None:
        team.tags = data.tags
    if data.status is not None:
        team.status = data.status
        team.refresh_ranking_flag()
    team.updated_at = utcnow()
    await session.flush()
    await _record(session, team, "team.updated")
    await _audit_update(session, team, before, audited(team))
    await bump(session, team.organization_id)
    return team


UPDATE_ACTIONS = (
    ("Name", "team.renamed"),
    ("Tags", "team.retagged"),
    ("Status", "team.status_changed"),
)
"""``PATCH /team/{id}``: one audit entry per aspect changed (filterable by action)."""


async def _audit_update(
    session: AsyncSession, team: Team, before: dict[str, object], after: dict[str, object]
) -> None:
    changed = [(f, a) for f, a in UPDATE_ACTIONS if before[f] != after[f]]
    for field, action in changed:
        await audit_team(session, team, action, {field: before[field]}, {field: after[field]})
    if not changed:  # a PATCH that changed nothing was still made
        await audit_team(session, team, "team.updated", before, after)


async def delete_team(session: AsyncSession, *, team: Team) -> None:
    await _record(session, team, "team.deleted")
    await audit_team(session, team, "team.deleted", {**audited(team), "Score": team.score}, None)
    await session.delete(team)
    await session.flush()
    await bump(session, team.organization_id)


async def set_admin_flag(session: AsyncSession, *, team: Team, value: bool | None) -> Team:
    """``value=None`` switches the flag (the seed's toggle); a bool sets it."""
    before = team.is_admin_team
    team.is_admin_team = (not team.is_admin_team) if value is None else value
    team.refresh_ranking_flag()
    after = team.is_admin_team
    return await _flag_set(
        session, team, "team.admin_changed", "team.admin_changed", "IsAdminTeam", before, after
    )


async def set_survey_flag(session: AsyncSession, *, team: Team, value: bool) -> Team:
    before = team.is_survey_completed
    team.is_survey_completed = value
    return await _flag_set(
        session, team, "team.updated", "team.survey_changed", "IsSurveyCompleted", before, value
    )


async def _flag_set(
    session: AsyncSession,
    team: Team,
    event: str,
    action: str,
    field: str,
    before: bool,
    after: bool,
) -> Team:
    """What follows setting one of the team's flags (``field``, as the API names it):
    its time stamp, the ``event``, the audit entry with the flag before and after, and
    the read model's new version."""
    team.updated_at = utcnow()
    await session.flush()
    await _record(session, team, event)
    await audit_team(session, team, action, {field: before}, {field: after})
    await bump(session, team.organization_id)
    return team


def archived(action: str) -> Conflict:
    """The refusal of an archived team's ``action`` (the routes' and the ledger's)."""
    return Conflict(f"The team is archived and refuses {action}; make it Active first.")


def ensure_active(team: Team, action: str) -> None:
    if team.status is TeamStatus.ARCHIVED:
        raise archived(action)


@dataclass(frozen=True, slots=True)
class MembershipResult:
    member: Member
    member_created: bool
    membership_created: bool


async def _join(session: AsyncSession, team: Team, member_id: uuid.UUID) -> bool:
    """Put the member in the team; False when it was in it already (its row is left as
    it is: joining is idempotent)."""
    result = await session.execute(
        insert_ignoring_conflicts(
            session, TeamMembership.__table__, ["organization_id", "team_id", "member_id"]
        )
        .values(
            organization_id=team.organization_id,
            team_id=team.id,
            member_id=member_id,
            created_at=utcnow(),
        )
        .returning(TeamMembership.__table__.c.member_id)
    )
    return result.scalar_one_or_none() is not None


async def add_member(
    session: AsyncSession, *, team: Team, email: str, given_name: str
) -> MembershipResult:
    """Find or create the member by e-mail and put it in the team (idempotent)."""
    ensure_active(team, "new members")
    found = await members_service.find_or_create(
        session, org_id=team.organization_id, email=email, given_name=given_name
    )
    joined = await _join(session, team, found.member.id)
    if joined or found.created:
        await bump(session, team.organization_id)
    if found.created:
        await members_service.audit_created(session, found.member)
    if joined:
        await _record_membership(session, team, found.member.id, "member.added")
        await audit_team(session, team, "member.added", None, {"MemberId": found.member.id})
    return MembershipResult(found.member, found.created, joined)


async def remove_member(session: AsyncSession, *, team: Team, member_id: uuid.UUID) -> None:
    result = await session.execute(
        delete(TeamMembership).where(
            TeamMembership.organization_id == team.organization_id,
            TeamMembership.team_id == team.id,
            TeamMembership.member_id == member_id,
        )
    )
    if not getattr(result, "rowcount", 0):
        raise not_found("member in this team")
    await _record_membership(session, team, member_id, "member.removed")
    await audit_team(session, team, "member.removed", {"MemberId": member_id}, None)
    await bump(session, team.organization_id)


async def add_members_by_id(
    session: AsyncSession, *, team: Team, member_ids: list[uuid.UUID]
) -> list[uuid.UUID]:
    """Put members of the organization (by id, known to exist) in the team; the ids that
    joined (those already in it are left as they are). Refused for an archived team."""
    ensure_active(team, "new members")
    joined: list[uuid.UUID] = []
    for member_id in dict.fromkeys(member_ids):
        if await _join(session, team, member_id):
            joined.append(member_id)
            await _record_membership(session, team, member_id, "member.added")
    if joined:
        await audit.record_many(
            session,
            organization_id=team.organization_id,
            changes=[
                audit.Change("member.added", ("team", team.id), None, {"MemberId": m})
                for m in joined
            ],
        )
        await bump(session, team.organization_id)
    return joined


async def remove_from_all_teams(
    session: AsyncSession, *, org_id: uuid.UUID, member_id: uuid.UUID
) -> list[uuid.UUID]:
    """Take a member out of every team it is in (each a ``member.removed`` event); the
    teams keep their progress and history. The ids of the teams it left."""
    team_ids = list(
        await session.scalars(
            select(TeamMembership.team_id).where(
                TeamMembership.organization_id == org_id, TeamMembership.member_id == member_id
            )
        )
    )
    for team_id in team_ids:
        team = await get_team(session, org_id=org_id, team_id=team_id)
        await remove_member(session, team=team, member_id=member_id)
    return team_ids

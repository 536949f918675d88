"""Team rules: creation, changes, membership and the admin flag."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, delete, func, insert, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from questline import events
from questline.members import service as members_service
from questline.members.models import Member
from questline.readmodel.http import dumps
from questline.readmodel.lean import LeanRequest
from questline.readmodel.versions import bump
from questline.storage.db import insert_ignoring_conflicts, utcnow
from questline.teams import schemas
from questline.teams.models import Team, TeamMembership, TeamStatus
from questline.web.errors import Conflict, FieldError, PreconditionFailed, Unprocessable, not_found
from questline.web.identity import Role
from questline.web.metrics import TEAMS_CREATED, count_on_commit
from questline.web.pagination import PageRequest, cursor_parts


@dataclass(frozen=True, slots=True)
class TeamWithCount:
    team: Team
    member_count: int


def etag_of(team: Team) -> str:
    return f'"{team.id.hex}.{team.version}"'


def to_schema(team: Team, member_count: int) -> schemas.Team:
    return schemas.Team(
        id=team.id,
        name=team.name,
        organization_id=team.organization_id,
        status=team.status,
        tags=list(team.tags),
        score=team.score,
        is_survey_completed=team.is_survey_completed,
        is_admin_team=team.is_admin_team,
        member_count=member_count,
        created_at=team.created_at,
    )


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


def _teams_query(org_id: uuid.UUID) -> Select[Team, int]:
    return select(Team, member_count_column()).where(Team.organization_id == org_id)


TEAM_COLUMNS = (
    Team.id,
    Team.name,
    Team.organization_id,
    Team.status,
    Team.tags,
    Team.score,
    Team.is_survey_completed,
    Team.is_admin_team,
    Team.created_at,
    Team.name_key,
)


def team_json(row: Any, member_count: int) -> dict[str, Any]:
    """A ``schemas.Team`` as its JSON object, from a row of ``TEAM_COLUMNS`` (or a Team)."""
    return {
        "Id": row.id,
        "Name": row.name,
        "OrganizationId": row.organization_id,
        "Status": row.status.value if isinstance(row.status, TeamStatus) else row.status,
        "Tags": list(row.tags),
        "Score": row.score,
        "IsSurveyCompleted": row.is_survey_completed,
        "IsAdminTeam": row.is_admin_team,
        "MemberCount": member_count,
        "CreatedAt": row.created_at,
    }


def whole_list_query(org_id: uuid.UUID) -> Any:
    """``GET /team`` without paging: every team of the organization with its member
    count, by name, in one statement (streamed by ``readmodel.http.serve_list``)."""
    return (
        select(*TEAM_COLUMNS, member_count_column().label("member_count"))
        .where(Team.organization_id == org_id)
        .order_by(Team.name_key, Team.id)
    )


def encode_team_rows(rows: Sequence[Any]) -> bytes:
    """A chunk of ``whole_list_query``'s rows as a JSON array (``GET /team``'s items)."""
    return dumps([team_json(row, row.member_count) for row in rows])


async def list_team_rows(
    session: AsyncSession, *, org_id: uuid.UUID, page: PageRequest
) -> list[Any]:
    """``GET /team`` in one Core statement: the team columns and the member count."""
    query = select(*TEAM_COLUMNS, member_count_column().label("member_count")).where(
        Team.organization_id == org_id
    )
    if page.after is not None:
        name_after, id_after = cursor_parts(page.after, str, uuid.UUID)
        query = query.where(tuple_(Team.name_key, Team.id) > (name_after, id_after))
    query = query.order_by(Team.name_key, Team.id)
    if page.fetch_size is not None:
        query = query.limit(page.fetch_size)
    return list((await session.execute(query)).all())


async def team_detail_json(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, hide_emails: bool
) -> tuple[dict[str, Any], str]:
    """``GET /team/{id}`` in one Core statement (``detail_query``). Returns the
    ``schemas.TeamDetail`` JSON object and the team's ETag. ``hide_emails``: what a
    caller with the member role sees (``members.as_seen_by``)."""
    rows = (await session.execute(detail_query(), {"org": org_id, "team": team_id})).all()
    found = detail_from_rows(rows, hide_emails=hide_emails)
    if found is None:
        raise not_found("team")
    return found


DETAIL_MEMBER_AT = len(TEAM_COLUMNS) + 1
"""Where a ``detail_query`` row's member columns start (after the team's and its version)."""


def detail_from_rows(
    rows: Sequence[Any], *, hide_emails: bool
) -> tuple[dict[str, Any], str] | None:
    """The ``schemas.TeamDetail`` JSON object and ETag from ``detail_query``'s rows
    (None: no such team). Shared by the route and the read model's lean miss."""
    if not rows:
        return None
    team = rows[0]
    members: list[dict[str, Any]] = []
    last = None
    at = DETAIL_MEMBER_AT
    for row in rows:
        member_id, member_org, email, given_name, created_at, in_team = row[at : at + 6]
        if member_id is None:
            continue  # a team without members: its one row has none
        if member_id != last:
            last = member_id
            members.append(
                {
                    "Id": member_id,
                    "OrganizationId": member_org,
                    "Email": None if hide_emails else email,  # members see names only
                    "GivenName": given_name,
                    "TeamIds": [],
                    "CreatedAt": created_at,
                }
            )
        if in_team is not None:
            members[-1]["TeamIds"].append(in_team)
    body = team_json(_TeamView(*team[: len(TEAM_COLUMNS)]), len(members))
    body["Members"] = members
    return body, f'"{team[0].hex}.{team[len(TEAM_COLUMNS)]}"'


@dataclass(frozen=True, slots=True)
class _TeamView:
    """A row of ``TEAM_COLUMNS`` by attribute (``team_json`` reads attributes)."""

    id: Any
    name: Any
    organization_id: Any
    status: Any
    tags: Any
    score: Any
    is_survey_completed: Any
    is_admin_team: Any
    created_at: Any
    name_key: Any


def detail_etag(team_etag: str, version: int, role: str) -> str:
    """``GET /team/{id}``'s validator: the team's own (``If-Match`` compares that part),
    then the organization's version and the role (members' bodies hide e-mails)."""
    return f'{team_etag[:-1]}-{version}{role[0]}"'


LEAN_MAX_ROWS = 2_000
"""A lean miss (read model fast path) reads at most this many rows on the event loop;
a larger team takes the route."""


async def lean_team_detail(request: LeanRequest) -> tuple[bytes, dict[str, str]] | None:
    """``GET /team/{id}`` on a read-model miss, without a session (``readmodel.lean``):
    the route's statement and body. None (the route answers): no such team in the
    caller's organization (its 404), or a team too large for the loop."""
    reader = request.reader
    statement = reader.statement("team-detail", lambda: detail_query(LEAN_MAX_ROWS + 1))
    rows = await reader.fetch(
        statement, {"org": request.organization_id, "team": request.resource_id}
    )
    if len(rows) > LEAN_MAX_ROWS:
        return None
    found = detail_from_rows(rows, hide_emails=request.role != Role.ADMIN.value)
    if found is None:
        return None
    body, etag = found
    return dumps(body), {"ETag": detail_etag(etag, request.version, request.role)}


@functools.cache
def detail_query(limit: int | None = None) -> Any:
    """The team, then one row per (member, team of that member), ordered by the members'
    e-mails: the team's columns repeat on each row (a team without members has one row
    with NULL member columns). ``limit`` bounds the rows (the lean read's guard).
    Built once: composing a statement costs more CPU than running it (profiled)."""
    org: Any = bindparam("org")
    team: Any = bindparam("team")
    mine, other = aliased(TeamMembership), aliased(TeamMembership)
    query = (
        select(
            *TEAM_COLUMNS,
            Team.version,
            Member.id,
            Member.organization_id,
            Member.email,
            Member.given_name,
            Member.created_at,
            other.team_id,
        )
        .select_from(Team)
        .outerjoin(mine, (mine.organization_id == Team.organization_id) & (mine.team_id == Team.id))
        .outerjoin(
            Member,
            (Member.organization_id == mine.organization_id) & (Member.id == mine.member_id),
        )
        .outerjoin(
            other,
            (other.organization_id == Member.organization_id) & (other.member_id == Member.id),
        )
        .where(Team.organization_id == org, Team.id == team)
        .order_by(Member.email_key, Member.id, other.team_id)
    )
    return query if limit is None else query.limit(limit)


async def list_teams(
    session: AsyncSession, *, org_id: uuid.UUID, page: PageRequest
) -> list[TeamWithCount]:
    query = _teams_query(org_id)
    if page.after is not None:
        name_after, id_after = cursor_parts(page.after, str, uuid.UUID)
        query = query.where(tuple_(Team.name_key, Team.id) > (name_after, id_after))
    query = query.order_by(Team.name_key, Team.id)
    if page.fetch_size is not None:
        query = query.limit(page.fetch_size)
    rows = await session.execute(query)
    return [TeamWithCount(row[0], row[1]) for row in rows.all()]


def cursor_of(team: Team) -> list[str]:
    return [team.name_key, str(team.id)]


async def get_team(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, for_update: bool = False
) -> Team:
    """The team, or 404 when it is not in the caller's organization.

    ``for_update`` locks the row (PostgreSQL) so that read-modify-write steps such as
    the admin switch see the latest committed value.
    """
    query = select(Team).where(Team.organization_id == org_id, Team.id == team_id)
    if for_update:
        query = query.with_for_update()
    team = await session.scalar(query)
    if team is None:
        raise not_found("team")
    return team


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
    session: AsyncSession, *, org_id: uuid.UUID, data: schemas.TeamCreate
) -> TeamWithCount:
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
    await bump(session, team.organization_id)
    return team


async def delete_team(session: AsyncSession, *, team: Team) -> None:
    await _record(session, team, "team.deleted")
    await session.delete(team)
    await session.flush()
    await bump(session, team.organization_id)


async def set_admin_flag(session: AsyncSession, *, team: Team, value: bool | None) -> Team:
    """``value=None`` switches the flag (the seed's toggle); a bool sets it."""
    team.is_admin_team = (not team.is_admin_team) if value is None else value
    team.refresh_ranking_flag()
    team.updated_at = utcnow()
    await session.flush()
    await _record(session, team, "team.admin_changed")
    await bump(session, team.organization_id)
    return team


async def set_survey_flag(session: AsyncSession, *, team: Team, value: bool) -> Team:
    team.is_survey_completed = value
    team.updated_at = utcnow()
    await session.flush()
    await _record(session, team, "team.updated")
    await bump(session, team.organization_id)
    return team


def ensure_active(team: Team, action: str) -> None:
    if team.status is TeamStatus.ARCHIVED:
        raise Conflict(f"The team is archived and refuses {action}; make it Active first.")


@dataclass(frozen=True, slots=True)
class MembershipResult:
    member: Member
    member_created: bool
    membership_created: bool


async def add_member(
    session: AsyncSession, *, team: Team, email: str, given_name: str
) -> MembershipResult:
    """Find or create the member by e-mail and put it in the team (idempotent)."""
    ensure_active(team, "new members")
    found = await members_service.find_or_create(
        session, org_id=team.organization_id, email=email, given_name=given_name
    )
    result = await session.execute(
        insert_ignoring_conflicts(
            session, TeamMembership.__table__, ["organization_id", "team_id", "member_id"]
        )
        .values(
            organization_id=team.organization_id,
            team_id=team.id,
            member_id=found.member.id,
            created_at=utcnow(),
        )
        .returning(TeamMembership.__table__.c.member_id)
    )
    joined = result.scalar_one_or_none() is not None
    if joined or found.created:
        await bump(session, team.organization_id)
    if joined:
        await _record_membership(session, team, found.member.id, "member.added")
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
    await bump(session, team.organization_id)


async def team_members(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, page: PageRequest
) -> Sequence[Member]:
    return await members_service.list_members(session, org_id=org_id, page=page, team_id=team_id)

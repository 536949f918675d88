"""Reading teams: ``GET /team`` and ``GET /team/{id}`` as their JSON, each from one Core
statement that the route and the read model's lean miss (``lean_team_detail``) share."""

from __future__ import annotations

import functools
import uuid
from collections import namedtuple
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from sqlalchemy import Integer, bindparam, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from questline.members import service as members_service
from questline.members.models import Member, TeamMembership
from questline.readmodel.http import dumps
from questline.readmodel.lean import LeanRequest
from questline.teams.models import Team, TeamStatus
from questline.teams.service import member_count_column
from questline.web.errors import not_found
from questline.web.identity import Role
from questline.web.pagination import PageRequest, announce_next_page, cursor_parts, split_page

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


def page_query(org_id: uuid.UUID | Any, *, limit: int | Any, after: list[Any] | None = None) -> Any:
    """``GET /team?limit=`` in one Core statement: the team columns and the member count,
    by name, from after the cursor's team; values or bound parameters (the lean miss's)."""
    query = select(*TEAM_COLUMNS, member_count_column().label("member_count")).where(
        Team.organization_id == org_id
    )
    if after is not None:
        name_after, id_after = cursor_parts(after, str, uuid.UUID)
        query = query.where(tuple_(Team.name_key, Team.id) > (name_after, id_after))
    query = query.order_by(Team.name_key, Team.id)
    return query if limit is None else query.limit(limit)


async def list_team_rows(
    session: AsyncSession, *, org_id: uuid.UUID, page: PageRequest
) -> list[Any]:
    """``GET /team``'s rows (``page_query``)."""
    query = page_query(org_id, limit=page.fetch_size, after=page.after)
    return list((await session.execute(query)).all())


def page_answer(
    request: Request, rows: list[Any], page: PageRequest
) -> tuple[list[Any], dict[str, str]]:
    """The page's rows (``rows`` holds one more when a next page exists) and its ``Link``."""
    rows, more = split_page(rows, page)
    scratch = Response()
    last = [rows[-1].name_key, str(rows[-1].id)] if more else None
    announce_next_page(request, scratch, page, last)
    return rows, ({"Link": scratch.headers["link"]} if "link" in scratch.headers else {})


ListedTeam = namedtuple(  # type: ignore[misc]
    "ListedTeam", [column.key for column in TEAM_COLUMNS] + ["member_count"]
)
"""A lean read's row of ``page_query`` by attribute, as the session's rows are."""


async def lean_team_page(request: LeanRequest) -> tuple[bytes, dict[str, str]] | None:
    """``GET /team?limit=`` (a first page) on a read-model miss, without a session
    (``readmodel.lean``): the route's statement, page, ``Link`` and body. None (the
    route answers): no ``limit`` (the whole list, which the route streams)."""
    limit = request.query["limit"]
    if limit is None:
        return None
    page = PageRequest(limit=limit, after=None)
    reader = request.reader
    statement = reader.statement(
        "team-page", lambda: page_query(bindparam("org"), limit=bindparam("limit", type_=Integer))
    )
    found = await reader.fetch(
        statement, {"org": request.organization_id, "limit": page.fetch_size}
    )
    rows, headers = page_answer(request.request, [ListedTeam._make(r) for r in found], page)
    return dumps([team_json(row, row.member_count) for row in rows]), headers


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
"""A lean miss (answered early by the fast lane) reads at most this many rows on the event loop;
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
    Built once: composing a statement costs more CPU than running it
    (docs/performance.md, "Lean misses")."""
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


def cursor_of(team: Team) -> list[str]:
    return [team.name_key, str(team.id)]


async def team_members(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, page: PageRequest
) -> Sequence[Member]:
    return await members_service.list_members(session, org_id=org_id, page=page, team_id=team_id)

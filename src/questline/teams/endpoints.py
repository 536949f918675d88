"""The team endpoints: the seed's five plus the reads and changes users expect."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response, status
from sqlalchemy.ext.asyncio import AsyncSession

from questline.mail import service as mail_service
from questline.members import service as members_service
from questline.members.schemas import Member
from questline.readmodel import moved
from questline.readmodel.http import CachedRead, dumps, serve, serve_list
from questline.teams import models, queries, schemas, service
from questline.web import csvexport
from questline.web.access import AdminOf, MemberOf
from questline.web.openapi import problem_responses
from questline.web.pagination import (
    BoundedPagingDep,
    PageDep,
)
from questline.web.paths import MemberId, TeamId
from questline.web.preconditions import IF_MATCH_SCHEMA, if_match_header
from questline.web.routing import SessionDep, TransactionalRoute, answers_early, url_of
from questline.web.state import app_state

router = APIRouter(prefix="/team", tags=["teams"], route_class=TransactionalRoute)
IfMatch = Annotated[str | None, if_match_header("team"), IF_MATCH_SCHEMA]


async def _changed_team(
    session: AsyncSession, response: Response, team: models.Team
) -> schemas.Team:
    """The team as a change returns it: with its new ETag and member count."""
    response.headers["ETag"] = service.etag_of(team)
    counted = await service.with_count(session, team)
    return service.to_schema(counted.team, counted.member_count)


def _location(request: Request, team_id: object) -> str:
    return url_of(request, "get_team", team_id=str(team_id))


@router.get(
    "",
    response_model=list[schemas.Team],
    responses={**csvexport.openapi(schemas.Team), **problem_responses(401, 403, 422)},
)
@answers_early(
    CachedRead(miss=queries.lean_team_page, query=("limit",), depends=moved.always(moved.SCORES))
)
async def list_teams(
    request: Request, tenant: MemberOf, session: SessionDep, page: PageDep
) -> Response:
    """Every team of the caller's organization, by name (opt-in paging: `limit`, `after`).
    Send the `ETag` back as `If-None-Match`: 304 while nothing changed. With
    `Accept: text/csv`: the same teams as CSV (`Tags` joined with `;`)."""

    async def team_page() -> tuple[list[Any], dict[str, str]]:
        rows = await queries.list_team_rows(session, org_id=tenant.org_id, page=page)
        return queries.page_answer(request, rows, page)

    if csvexport.wants_csv(request):
        rows, headers = await team_page()
        teams = [schemas.Team.model_validate(queries.team_json(r, r.member_count)) for r in rows]
        return csvexport.response(schemas.Team, teams, filename="teams.csv", headers=headers)

    if page.limit is None and page.after is None:
        # The seed's whole list: cached bytes while short, streamed in chunks when long.
        return await serve_list(
            request,
            statement=queries.whole_list_query(tenant.org_id),
            encode=queries.encode_team_rows,
            depends=moved.SCORED,
        )

    async def build(_version: int) -> tuple[bytes, dict[str, str]]:
        rows, headers = await team_page()
        return dumps([queries.team_json(row, row.member_count) for row in rows]), headers

    return await serve(request, build=build, depends=moved.SCORED)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.Team,
    responses=problem_responses(400, 401, 403, 409, 413, 415, 422, 503),
)
async def create_team(
    request: Request,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.TeamCreate,
) -> schemas.Team:
    """Create a team, optionally with members (ids of the organization's members) and tags;
    `Invite: true` e-mails each member an invitation."""
    if data.invite:
        mail_service.require_mail(app_state(request).settings)
    created = await service.create_team(session, org_id=tenant.org_id, data=data)
    if data.invite:
        await mail_service.queue_invites(session, org_id=tenant.org_id, member_ids=data.members)
    response.headers["Location"] = _location(request, created.team.id)
    response.headers["ETag"] = service.etag_of(created.team)
    return service.to_schema(created.team, created.member_count)


@router.get(
    "/{team_id}", response_model=schemas.TeamDetail, responses=problem_responses(401, 403, 404)
)
@answers_early(
    CachedRead(miss=queries.lean_team_detail, resource="team_id", depends=moved.on_team())
)
async def get_team(
    team_id: TeamId, request: Request, tenant: MemberOf, session: SessionDep
) -> Response:
    """One team with its members. Its `ETag` also serves as `If-Match` on changes, and as
    `If-None-Match` here (304 while nothing changed)."""

    async def build(version: int) -> tuple[bytes, dict[str, str]]:
        body, etag = await queries.team_detail_json(
            session, org_id=tenant.org_id, team_id=team_id, hide_emails=not tenant.is_admin
        )
        return dumps(body), {"ETag": queries.detail_etag(etag, version, tenant.caller.role.value)}

    return await serve(request, build=build, own_etag=True, depends=moved.on_team()(team_id))


@router.patch(
    "/{team_id}",
    response_model=schemas.Team,
    responses=problem_responses(400, 401, 403, 404, 409, 412, 415, 422),
)
async def update_team(
    team_id: TeamId,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.TeamUpdate,
    if_match: IfMatch = None,
) -> schemas.Team:
    """Change `Name`, `Tags` or `Status` (Active | Archived).

    Send the `ETag` you read as `If-Match` to guard against lost updates (412 when stale).
    """
    team = await service.get_team(session, org_id=tenant.org_id, team_id=team_id, for_update=True)
    team = await service.update_team(session, team=team, data=data, if_match=if_match)
    return await _changed_team(session, response, team)


@router.delete(
    "/{team_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(401, 403, 404, 412),
)
async def delete_team(
    team_id: TeamId,
    tenant: AdminOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Delete a team, its memberships and its progress (members stay in the organization)."""
    team = await service.get_team(session, org_id=tenant.org_id, team_id=team_id, for_update=True)
    service.check_if_match(team, if_match)
    await service.delete_team(session, team=team)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{team_id}/members",
    response_model=list[Member],
    responses=problem_responses(401, 403, 404, 422),
)
async def list_team_members(
    team_id: TeamId, tenant: MemberOf, session: SessionDep, paging: BoundedPagingDep
) -> list[Member]:
    """The team's members, by e-mail; paged (`limit`, default 100, at most 1000; the next
    page in the `Link` header). Members (role `member`) see names, not e-mails."""
    team = await service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    rows = await queries.team_members(
        session, org_id=tenant.org_id, team_id=team.id, page=paging.page
    )
    members = paging.rows(rows, members_service.cursor_of)
    described = await members_service.describe(session, org_id=tenant.org_id, members=members)
    return members_service.as_seen_by(tenant, described)


@router.post(
    "/{team_id}/members",
    status_code=status.HTTP_201_CREATED,
    response_model=Member,
    responses={
        200: {"description": "The member was already in the team.", "model": Member},
        **problem_responses(400, 401, 403, 404, 409, 413, 415, 422, 503),
    },
)
async def add_member(
    team_id: TeamId,
    request: Request,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.MemberAdd,
) -> Member:
    """Add a member by e-mail (found or created in the organization). 201 when the member
    joins the team, 200 when it was already in it. `Invite: true` e-mails the member an
    invitation when it joins (201), not again when it was in the team already (200)."""
    if data.invite:
        mail_service.require_mail(app_state(request).settings)
    team = await service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    result = await service.add_member(
        session, team=team, email=str(data.email), given_name=data.given_name
    )
    if data.invite and result.membership_created:
        await mail_service.queue_invites(
            session, org_id=tenant.org_id, member_ids=[result.member.id]
        )
    if not result.membership_created:
        response.status_code = status.HTTP_200_OK
    response.headers["Location"] = url_of(request, "get_member", member_id=str(result.member.id))
    [described] = await members_service.describe(
        session, org_id=tenant.org_id, members=[result.member]
    )
    return described


@router.delete(
    "/{team_id}/members/{member_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(401, 403, 404),
)
async def remove_member(
    team_id: TeamId, member_id: MemberId, tenant: AdminOf, session: SessionDep
) -> Response:
    """Take a member out of the team (the member stays in the organization)."""
    team = await service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    await service.remove_member(session, team=team, member_id=member_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{team_id}/isadminteam",
    response_model=schemas.Team,
    responses=problem_responses(400, 401, 403, 404, 415, 422),
)
async def switch_admin_team(
    team_id: TeamId,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: Annotated[schemas.AdminFlag | None, Body()] = None,
) -> schemas.Team:
    """Mark the team as a management (admin) team, left out of the leaderboard and graphs.

    Without a body the call is a switch: on an admin team it makes it a normal team again.
    With `{"IsAdminTeam": true|false}` it sets the flag. Send an `Idempotency-Key` so that
    a retried switch does not flip twice.
    """
    team = await service.get_team(session, org_id=tenant.org_id, team_id=team_id, for_update=True)
    team = await service.set_admin_flag(
        session, team=team, value=None if data is None else data.is_admin_team
    )
    return await _changed_team(session, response, team)


@router.post(
    "/{team_id}/survey",
    response_model=schemas.Team,
    responses=problem_responses(400, 401, 403, 404, 415, 422),
)
async def set_survey(
    team_id: TeamId,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: Annotated[schemas.SurveyFlag | None, Body()] = None,
) -> schemas.Team:
    """Set `IsSurveyCompleted` (default `true` when no body is sent)."""
    team = await service.get_team(session, org_id=tenant.org_id, team_id=team_id, for_update=True)
    value = True if data is None else data.is_survey_completed
    team = await service.set_survey_flag(session, team=team, value=value)
    return await _changed_team(session, response, team)

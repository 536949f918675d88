"""``/season``: the organization's seasons (any role reads them, admins manage them)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from questline.seasons import schemas, service
from questline.web.access import AdminOf, MemberOf
from questline.web.openapi import problem_responses
from questline.web.paths import SeasonId
from questline.web.routing import SessionDep, TransactionalRoute, url_of

router = APIRouter(prefix="/season", tags=["seasons"], route_class=TransactionalRoute)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.Season,
    responses=problem_responses(400, 401, 403, 413, 415, 422),
)
async def create_season(
    request: Request,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.SeasonCreate,
) -> schemas.Season:
    """A season: `GET /leaderboard?season={id}` ranks teams by the points of their
    completions with `CompletedAt` in `[StartsAt, EndsAt)`. With `FreezesAt`, members
    see the standings as they were at that instant until `EndsAt` or a reveal
    (`StartsAt < FreezesAt ≤ EndsAt`, else 422). `DisciplineId` (optional) is the
    discipline the season ranks by unless the request names another."""
    season = await service.create_season(session, org_id=tenant.org_id, data=data)
    response.headers["Location"] = url_of(request, "get_season", season_id=str(season.id))
    return service.to_schema(season)


@router.get("", response_model=list[schemas.Season], responses=problem_responses(401, 403))
async def list_seasons(tenant: MemberOf, session: SessionDep) -> list[schemas.Season]:
    """The organization's seasons, the latest start first, each with its `Phase`."""
    found = await service.list_seasons(session, org_id=tenant.org_id)
    return [service.to_schema(s) for s in found]


@router.get(
    "/{season_id}", response_model=schemas.Season, responses=problem_responses(401, 403, 404)
)
async def get_season(season_id: SeasonId, tenant: MemberOf, session: SessionDep) -> schemas.Season:
    """One season."""
    season = await service.get_season(session, org_id=tenant.org_id, season_id=season_id)
    return service.to_schema(season)


@router.patch(
    "/{season_id}",
    response_model=schemas.Season,
    responses=problem_responses(400, 401, 403, 404, 415, 422),
)
async def update_season(
    season_id: SeasonId, tenant: AdminOf, session: SessionDep, data: schemas.SeasonUpdate
) -> schemas.Season:
    """Change the name, the times or the discipline (only the fields given; `null`
    clears `FreezesAt` or `DisciplineId`). The times are checked together as on
    creation (422). A reveal stays in force."""
    season = await service.get_season(
        session, org_id=tenant.org_id, season_id=season_id, for_update=True
    )
    return service.to_schema(await service.update_season(session, season=season, data=data))


@router.delete(
    "/{season_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(401, 403, 404),
)
async def delete_season(season_id: SeasonId, tenant: AdminOf, session: SessionDep) -> Response:
    """Delete the season (the completions it counted stay: they belong to the teams)."""
    season = await service.get_season(
        session, org_id=tenant.org_id, season_id=season_id, for_update=True
    )
    await service.delete_season(session, season=season)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{season_id}/reveal",
    response_model=schemas.Season,
    responses=problem_responses(401, 403, 404, 409),
)
async def reveal_season(
    season_id: SeasonId, tenant: AdminOf, session: SessionDep
) -> schemas.Season:
    """End the freeze now: from this response on, every process serves members the
    live standings (then the final ones after `EndsAt`). 409 when the season is not
    frozen."""
    season = await service.get_season(
        session, org_id=tenant.org_id, season_id=season_id, for_update=True
    )
    return service.to_schema(await service.reveal(session, season=season))

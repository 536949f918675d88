"""The leaderboard and the progress graphs (admin and archived teams left out)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from questline.auth.dependencies import MemberOf
from questline.leaderboard import graphs, schemas, service
from questline.readmodel.http import dumps, serve
from questline.teams import service as teams_service
from questline.web.errors import not_found
from questline.web.openapi import problem_responses
from questline.web.pagination import public_url
from questline.web.paths import TeamId
from questline.web.routing import SessionDep, TransactionalRoute
from questline.web.schemas import InputDateTime

router = APIRouter(tags=["leaderboard"], route_class=TransactionalRoute)

MAX_TOP = 50


async def _discipline(
    discipline: Annotated[
        str | None,
        Query(
            max_length=64,
            description="Rank by the points earned in this discipline (its id).",
        ),
    ] = None,
) -> uuid.UUID | None:
    """A discipline id that is malformed names no discipline: 404, like an unknown one."""
    if discipline is None:
        return None
    try:
        return uuid.UUID(discipline)
    except ValueError:
        raise not_found("discipline") from None


DisciplineQuery = Annotated[uuid.UUID | None, Depends(_discipline)]


async def _window(
    discipline_id: DisciplineQuery,
    start: Annotated[
        InputDateTime | None,
        Query(alias="from", description="Start of the window (RFC 3339 with offset)."),
    ] = None,
    end: Annotated[
        InputDateTime | None,
        Query(alias="to", description="End of the window (RFC 3339 with offset)."),
    ] = None,
) -> graphs.Window:
    return graphs.Window(start=start, end=end, discipline_id=discipline_id)


WindowDep = Annotated[graphs.Window, Depends(_window)]


def _series(series: graphs.Series) -> schemas.Series:
    return schemas.Series(
        team_id=series.team_id,
        name=series.name,
        points=[schemas.GraphPoint(at=p.at, score=p.score) for p in series.points],
    )


@router.get(
    "/leaderboard",
    response_model=list[schemas.LeaderboardEntry],
    responses=problem_responses(401, 403, 404, 422),
)
async def get_leaderboard(
    request: Request,
    tenant: MemberOf,
    session: SessionDep,
    discipline_id: DisciplineQuery,
    limit: Annotated[int, Query(ge=1, le=service.MAX_LIMIT)] = service.DEFAULT_LIMIT,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Response:
    """Teams that are neither admin nor archived, by `Score` (desc), then the time the
    team reached it (earlier first), then `Name`. With `discipline`, by the points
    earned in that discipline; teams with none in it come last, by name. The next page
    is announced in a `Link` header. Send the `ETag` back as `If-None-Match`: 304 while
    nothing changed."""

    async def build(_version: int) -> tuple[bytes, dict[str, str]]:
        entries = await service.ranking(
            session,
            org_id=tenant.org_id,
            limit=limit + 1,
            offset=offset,
            discipline_id=discipline_id,
        )
        headers = {}
        if len(entries) > limit:
            entries = entries[:limit]
            query = {**request.query_params, "limit": str(limit), "offset": str(offset + limit)}
            url = public_url(request, request.url.path, query)
            headers["Link"] = f'<{url}>; rel="next"'
        return dumps([entry_json(e) for e in entries]), headers

    return await serve(
        request, organization_id=tenant.org_id, variant=tenant.caller.role.value, build=build
    )


def entry_json(entry: service.Entry) -> dict[str, object]:
    """A ``schemas.LeaderboardEntry`` as its JSON object (tests check the two agree)."""
    return {
        "Rank": entry.rank,
        "TeamId": entry.team_id,
        "Name": entry.name,
        "Score": entry.score,
        "TasksCompleted": entry.tasks_completed,
        "ReachedAt": entry.reached_at,
    }


def series_json(series: graphs.Series) -> dict[str, object]:
    """A ``schemas.Series`` as its JSON object."""
    return {
        "TeamId": series.team_id,
        "Name": series.name,
        "Points": [{"At": p.at, "Score": p.score} for p in series.points],
    }


@router.get(
    "/leaderboard/graph",
    response_model=list[schemas.Series],
    responses=problem_responses(401, 403, 404, 422),
)
async def get_leaderboard_graph(
    request: Request,
    tenant: MemberOf,
    session: SessionDep,
    window: WindowDep,
    top: Annotated[int, Query(ge=1, le=MAX_TOP, description="How many teams.")] = 10,
) -> Response:
    """The top teams' cumulative score over time, in rank order: a step function that
    starts at 0 (or at the value just before `from`), one point per change."""
    window.check()

    async def build(_version: int) -> tuple[bytes, dict[str, str]]:
        found = await graphs.top_series(session, org_id=tenant.org_id, top=top, window=window)
        return dumps([series_json(s) for s in found]), {}

    return await serve(
        request, organization_id=tenant.org_id, variant=tenant.caller.role.value, build=build
    )


@router.get(
    "/team/{team_id}/graph",
    response_model=schemas.Series,
    responses=problem_responses(401, 403, 404, 422),
    tags=["progress"],
)
async def get_team_graph(
    team_id: TeamId, tenant: MemberOf, session: SessionDep, window: WindowDep
) -> schemas.Series:
    """One team's cumulative score over time (admin and archived teams too)."""
    team = await teams_service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    return _series(await graphs.team_series(session, team=team, window=window))

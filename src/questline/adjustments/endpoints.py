"""``/team/{id}/adjustments``: an admin's manual changes of a team's score."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status

from questline.adjustments import schemas, service
from questline.teams import service as teams_service
from questline.web import csvexport
from questline.web.access import AdminOf, MemberOf
from questline.web.openapi import problem_responses
from questline.web.pagination import PagingDep
from questline.web.paths import TeamId, id_parser
from questline.web.routing import SessionDep, TransactionalRoute, url_of

router = APIRouter(prefix="/team", tags=["progress"], route_class=TransactionalRoute)


AdjustmentId = Annotated[uuid.UUID, Depends(id_parser("adjustment", "adjustment_id"))]


@router.post(
    "/{team_id}/adjustments",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.Adjustment,
    responses=problem_responses(400, 401, 403, 404, 409, 413, 415, 422),
)
async def adjust_score(
    team_id: TeamId,
    request: Request,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.AdjustmentCreate,
) -> schemas.Adjustment:
    """Add `Points` (negative: take them away) to the team's score, with a `Reason`, at
    `At` (default now; a past time counts then). It counts like a completion of that
    many points at that time: score, leaderboard (ties: the time the score was
    reached), windowed rankings, graphs and score history. 409 for an archived team; 422
    when the score would leave its range. Send an `Idempotency-Key` so that a retry
    does not adjust twice."""
    team = await teams_service.get_team(
        session, org_id=tenant.org_id, team_id=team_id, for_update=True
    )
    made = await service.adjust(session, team=team, data=data, recorded_by=tenant.caller.subject)
    response.headers["Location"] = url_of(
        request, "get_adjustment", team_id=str(team.id), adjustment_id=str(made.id)
    )
    return made


@router.get(
    "/{team_id}/adjustments",
    response_model=list[schemas.Adjustment],
    responses={**csvexport.openapi(schemas.Adjustment), **problem_responses(401, 403, 404, 422)},
)
async def list_adjustments(
    team_id: TeamId, tenant: MemberOf, session: SessionDep, paging: PagingDep
) -> list[schemas.Adjustment] | Response:
    """The team's adjustments by `At`, withdrawn ones too (with `WithdrawnAt`); opt-in
    paging (`limit`, `after`; the next page in the `Link` header). Members see them
    without who made them. With `Accept: text/csv`: as CSV."""
    team = await teams_service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    rows = await service.list_adjustments(session, team=team, page=paging.page)
    found = [
        service.to_schema(r, show_who=tenant.is_admin) for r in paging.rows(rows, service.cursor_of)
    ]
    if csvexport.wants_csv(paging.request):
        return csvexport.export(
            schemas.Adjustment, found, f"team-{team.id}-adjustments.csv", paging.response
        )
    return found


@router.get(
    "/{team_id}/adjustments/{adjustment_id}",
    response_model=schemas.Adjustment,
    responses=problem_responses(401, 403, 404),
)
async def get_adjustment(
    team_id: TeamId, adjustment_id: AdjustmentId, tenant: MemberOf, session: SessionDep
) -> schemas.Adjustment:
    """One adjustment of the team."""
    team = await teams_service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    row = await service.get_adjustment(session, team=team, adjustment_id=adjustment_id)
    return service.to_schema(row, show_who=tenant.is_admin)


@router.delete(
    "/{team_id}/adjustments/{adjustment_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(401, 403, 404, 409, 422),
)
async def withdraw_adjustment(
    team_id: TeamId, adjustment_id: AdjustmentId, tenant: AdminOf, session: SessionDep
) -> Response:
    """Withdraw an adjustment: the score loses its points now (a step in the history),
    and it no longer counts in any window. 409 when it was withdrawn already or the team
    is archived."""
    team = await teams_service.get_team(
        session, org_id=tenant.org_id, team_id=team_id, for_update=True
    )
    await service.withdraw(
        session, team=team, adjustment_id=adjustment_id, withdrawn_by=tenant.caller.subject
    )
    return Response(status_code=status.HTTP_204_NO_CONTENT)

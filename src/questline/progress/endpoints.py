"""Team progress: completing and withdrawing tasks, and the team's overview."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from questline.progress import (
    contributions,
    discipline_tree,
    overview_reads,
    rank_memo,
    record,
    schemas,
    self_check,
    service,
)
from questline.progress.early_write import GroupCommittedWrite, completion_response
from questline.progress.season_rank import season_rank_of
from questline.readmodel import moved
from questline.readmodel.http import CachedRead, dumps, serve
from questline.readmodel.service import readmodel_of
from questline.seasons.query import SeasonQuery
from questline.teams import service as teams_service
from questline.web import csvexport
from questline.web.access import AdminOf, MemberOf
from questline.web.openapi import problem_responses
from questline.web.paths import TaskId, TeamId
from questline.web.routing import SessionDep, TransactionalRoute, answers_early

router = APIRouter(prefix="/team", tags=["progress"], route_class=TransactionalRoute)

OVERVIEW_READS = moved.on_team(moved.RANKS)
"""An overview shows its team's own state and its rank among all the teams: its
builder adds where the team stands (``overview_body.place_of``), so a step elsewhere
that does not cross it leaves the overview as it is."""


@router.post(
    "/{team_id}/progress",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.Completion,
    responses={
        200: {
            "description": "The team had already completed the task.",
            "model": schemas.Completion,
        },
        **problem_responses(400, 401, 403, 404, 409, 415, 422),
    },
)
@answers_early(GroupCommittedWrite())
async def complete_task(
    team_id: TeamId,
    request: Request,
    tenant: MemberOf,
    session: SessionDep,
    data: schemas.ProgressCreate,
) -> Response:
    """Record that the team completed a task (`TaskId`, optional past `CompletedAt`,
    optional `MemberId`: the member of the team who completed it, else 422). The
    completion keeps `RecordedBy`: the caller's subject (the token's `sub`, or the
    dashboard session's).

    201 when this completes it (the team's `Score` grows by the task's points), 200 when
    it was already completed (nothing changes). Archived teams refuse progress (409).

    Admins record any task. A member of the team marks a task of `Check.Kind` `Self`
    complete (its `MemberId` is then the caller's member; `CompletedAt` and `MemberId`
    are not sent); any other kind is 403 to a member, as is another team; 409 while the
    task's level of a sequential discipline is locked.
    """
    if not tenant.is_admin:
        done = await self_check.complete_self(session, tenant=tenant, team_id=team_id, data=data)
        return completion_response(request, done)
    result = await record.complete(
        session,
        org_id=tenant.org_id,
        team_id=team_id,
        data=data,
        recorded_by=tenant.caller.subject,
    )
    return completion_response(request, result)


@router.get(
    "/{team_id}/progress",
    response_model=list[schemas.Completion],
    responses={**csvexport.openapi(schemas.Completion), **problem_responses(401, 403, 404)},
)
async def list_completions(
    team_id: TeamId, request: Request, response: Response, tenant: MemberOf, session: SessionDep
) -> list[schemas.Completion] | Response:
    """The tasks the team completed, oldest first. With `Accept: text/csv`: as CSV."""
    team = await teams_service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    done = [service.to_schema(c) for c in await service.list_completions(session, team=team)]
    if csvexport.wants_csv(request):
        return csvexport.export(schemas.Completion, done, f"team-{team.id}-progress.csv", response)
    return done


@router.get(
    "/{team_id}/progress/{task_id}",
    response_model=schemas.Completion,
    responses=problem_responses(401, 403, 404),
)
async def get_completion(
    team_id: TeamId, task_id: TaskId, tenant: MemberOf, session: SessionDep
) -> schemas.Completion:
    """One completed task of the team (404 when the team has not completed it)."""
    team = await teams_service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    return service.to_schema(await service.get_completion(session, team=team, task_id=task_id))


@router.delete(
    "/{team_id}/progress/{task_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(401, 403, 404, 409),
)
@answers_early(GroupCommittedWrite())
async def withdraw_task(
    team_id: TeamId, task_id: TaskId, tenant: AdminOf, session: SessionDep
) -> Response:
    """Withdraw a completion: the team's `Score` drops by the points it earned, and the
    history records a negative step. 404 when the team has not completed the task."""
    await record.withdraw(session, org_id=tenant.org_id, team_id=team_id, task_id=task_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{team_id}/overview",
    response_model=schemas.Overview,
    responses=problem_responses(401, 403, 404),
)
@answers_early(
    CachedRead(
        miss=overview_reads.lean_overview,
        resource="team_id",
        variant=contributions.early_variant,
        depends=OVERVIEW_READS,
    )
)
async def get_overview(
    team_id: TeamId,
    request: Request,
    tenant: MemberOf,
    session: SessionDep,
    season_id: SeasonQuery,
) -> Response:
    """The team's progress: score, rank, and for every discipline the organization sees
    (global and its own, by title) the tasks and points done per level and quest.
    Send the `ETag` back as `If-None-Match`: 304 while nothing changed.

    With `season={id}`: `Rank` is the team's rank in that season, as the caller sees it
    (during a freeze, members get the rank as at `FreezesAt`, with the header
    `Questline-Frozen-At`); the team's own progress stays live.

    `Contributions` (each member's points and tasks completed, then those of no named
    member under `MemberId: null`) is shown to admins and to the team's own members: a
    member caller whose e-mail (session, or the token's `email` claim) or subject names
    one of the team's members. Other members get it as `null`."""

    readmodel = readmodel_of(request)
    variant = await contributions.variant_in_route(
        session, readmodel=readmodel, caller=tenant.caller, org_id=tenant.org_id, team_id=team_id
    )

    async def build(version: int) -> tuple[bytes, dict[str, str]]:
        async def tree() -> list[discipline_tree.DisciplineNode]:
            return await discipline_tree.shared_tree(session, readmodel, org_id=tenant.org_id)

        async def ranks() -> rank_memo.Ranks:
            return await rank_memo.ranks(session, org_id=tenant.org_id, room=readmodel.largest_memo)

        nodes = await readmodel.memo(tenant.org_id, "tree", version, tree, moved.NOTHING)
        ranked = await readmodel.memo(tenant.org_id, "ranks", version, ranks, moved.SCORED)
        found, headers = await overview_reads.overview_json(
            session, org_id=tenant.org_id, team_id=team_id, tree=nodes, ranked=ranked
        )
        if season_id is not None:
            rank, headers = await season_rank_of(request)(
                session,
                readmodel=readmodel,
                caller=tenant.caller,
                team_id=team_id,
                season_id=season_id,
                version=version,
            )
            found["Rank"] = rank
        if contributions.sees_contributions(variant):
            found["Contributions"] = await contributions.contributions(
                session, org_id=tenant.org_id, team_id=team_id
            )
        return dumps(found), headers

    return await serve(
        request,
        build=build,
        own_etag=season_id is not None,
        variant=variant,
        # A season's rank is read at its own time: never carried.
        depends=OVERVIEW_READS(team_id) if season_id is None else None,
    )

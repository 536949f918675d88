"""A team's members act themselves: answers to `Answer` tasks, and hints."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from questline.learners import schemas, service
from questline.learners.early_answer import GroupCommittedAnswer
from questline.web.access import MemberOf
from questline.web.openapi import problem_responses
from questline.web.pagination import PageDep, announce_next_page
from questline.web.paths import TeamId
from questline.web.routing import SessionDep, TransactionalRoute, answers_early
from questline.web.state import app_state

router = APIRouter(prefix="/team", tags=["learners"], route_class=TransactionalRoute)


def _json(model: schemas.UnlockedHint, status_code: int) -> Response:
    return Response(
        content=model.model_dump_json(by_alias=True),
        status_code=status_code,
        media_type="application/json",
    )


@router.post(
    "/{team_id}/attempts",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.AttemptResult,
    responses={
        200: {"description": "A wrong answer (counted).", "model": schemas.AttemptResult},
        **problem_responses(400, 401, 403, 404, 409, 415, 422, 429),
    },
)
@answers_early(GroupCommittedAnswer())
async def submit_attempt(
    team_id: TeamId,
    request: Request,
    tenant: MemberOf,
    session: SessionDep,
    data: schemas.AttemptCreate,
) -> Response:
    """Answer an `Answer` task as a member of the team (or an admin).

    Right: 201 `{"Correct": true, "AttemptsLeft", "Completion"}` (the completion names the
    caller's member). Wrong: 200 `{"Correct": false, "AttemptsLeft"}`. 409 when the team
    already completed the task (`already-completed`), used every attempt
    (`no-attempts-left`), the team is archived, or the task's level is still locked
    (`locked`); 422 when the task is not an `Answer` task; 403 for a member of another
    team; 429 (with `Retry-After`) past `QUESTLINE_ATTEMPTS_PER_MINUTE` answers a minute
    by one member. A refused attempt is not counted.
    """
    outcome = await service.submit_attempt(
        session, tenant=tenant, team_id=team_id, data=data, settings=app_state(request).settings
    )
    return service.attempt_response(outcome)


@router.get(
    "/{team_id}/attempts",
    response_model=list[schemas.Attempt],
    responses=problem_responses(401, 403, 404, 422),
)
async def list_attempts(
    team_id: TeamId,
    request: Request,
    response: Response,
    tenant: MemberOf,
    session: SessionDep,
    page: PageDep,
) -> list[schemas.Attempt]:
    """The team's counted attempts, oldest first (opt-in paging: `limit`, `after`): the
    team's members and admins; admins also read each submitted `Answer`."""
    items, last = await service.list_attempts(
        session, tenant=tenant, team_id=team_id, page=page, settings=app_state(request).settings
    )
    announce_next_page(request, response, page, last)
    return items


@router.post(
    "/{team_id}/hints",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.UnlockedHint,
    responses={
        200: {
            "description": "Unlocked before: the same hint, no second charge.",
            "model": schemas.UnlockedHint,
        },
        **problem_responses(400, 401, 403, 404, 409, 415, 422),
    },
)
async def unlock_hint(
    team_id: TeamId, tenant: MemberOf, session: SessionDep, data: schemas.HintUnlockCreate
) -> Response:
    """Unlock a task's hint (`TaskId`, `Index`) for the team: 201 with its `Text`, and the
    team's score drops by its `Cost` (a step of the score history); 200 with the same
    body when the team had unlocked it already (no second charge). Members of the team
    and admins; 409 while the task's level is locked."""
    outcome = await service.unlock_hint(session, tenant=tenant, team_id=team_id, data=data)
    return _json(outcome.hint, 201 if outcome.created else 200)


@router.get(
    "/{team_id}/hints",
    response_model=list[schemas.UnlockedHint],
    responses=problem_responses(401, 403, 404),
)
async def list_hints(
    team_id: TeamId, tenant: MemberOf, session: SessionDep
) -> list[schemas.UnlockedHint]:
    """The hints the team unlocked, with their texts, in the order unlocked."""
    return await service.list_hints(session, tenant=tenant, team_id=team_id)

"""Submissions for review: ``/team/{id}/submissions`` (a team's members submit, the team
and admins read) and ``/submission`` (the admins' queue and their decisions)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Query, Request, Response, status

from questline.mail import service as mail
from questline.submissions import schemas, service
from questline.submissions.models import SubmissionState
from questline.teams import service as teams_service
from questline.web.access import AdminOf, MemberOf
from questline.web.openapi import problem_responses
from questline.web.pagination import PagingDep
from questline.web.paths import TeamId, id_parser
from questline.web.routing import SessionDep, TransactionalRoute, url_of
from questline.web.state import app_state

router = APIRouter(tags=["submissions"], route_class=TransactionalRoute)


SubmissionId = Annotated[uuid.UUID, Depends(id_parser("submission", "submission_id"))]


@router.post(
    "/team/{team_id}/submissions",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.Submission,
    responses=problem_responses(400, 401, 403, 404, 409, 413, 415, 422),
)
async def submit_work(
    team_id: TeamId,
    request: Request,
    response: Response,
    tenant: MemberOf,
    session: SessionDep,
    data: schemas.SubmissionCreate,
) -> schemas.Submission:
    """Submit work for a `Review` task of the team: `Text`, a `Url` or both. Only a
    member of the team (the caller's e-mail names one) submits; an admin reviews it.

    409 when the team already has a pending submission of the task, has completed it,
    is archived, or the task's level is closed (a sequential discipline); 422 when the
    task is not checked by review."""
    team = await teams_service.get_team(
        session, org_id=tenant.org_id, team_id=team_id, for_update=True
    )
    member_id = await service.submitter(session, tenant=tenant, team_id=team.id)
    row = await service.submit(session, team=team, member_id=member_id, data=data)
    response.headers["Location"] = url_of(request, "get_submission", submission_id=str(row.id))
    return service.to_schema(row)


@router.get(
    "/team/{team_id}/submissions",
    response_model=list[schemas.Submission],
    responses=problem_responses(401, 403, 404, 422),
)
async def list_team_submissions(
    team_id: TeamId, tenant: MemberOf, session: SessionDep, paging: PagingDep
) -> list[schemas.Submission]:
    """The team's submissions, oldest first, decided ones too; opt-in paging (`limit`,
    `after`; the next page in the `Link` header). Admins and the team's members."""
    team = await teams_service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    await service.ensure_sees_team(session, tenant=tenant, team_id=team.id)
    filters = service.Filters(team_id=team.id)
    rows = await service.list_submissions(
        session, org_id=tenant.org_id, filters=filters, page=paging.page
    )
    return [
        service.to_schema(row, show_who=tenant.is_admin)
        for row in paging.rows(rows, service.cursor_of)
    ]


@router.get(
    "/submission",
    response_model=list[schemas.Submission],
    responses=problem_responses(401, 403, 422),
)
async def list_submissions(
    tenant: AdminOf,
    session: SessionDep,
    paging: PagingDep,
    state: Annotated[SubmissionState | None, Query(description="Only those in this state.")] = None,
    team: Annotated[uuid.UUID | None, Query(description="Only this team's.")] = None,
    task: Annotated[uuid.UUID | None, Query(description="Only those of this task.")] = None,
) -> list[schemas.Submission]:
    """The organization's submissions, oldest first: `?state=Pending` is the review
    queue. Opt-in paging (`limit`, `after`; the next page in the `Link` header)."""
    filters = service.Filters(state=state, team_id=team, task_id=task)
    rows = await service.list_submissions(
        session, org_id=tenant.org_id, filters=filters, page=paging.page
    )
    return [service.to_schema(row) for row in paging.rows(rows, service.cursor_of)]


@router.get(
    "/submission/{submission_id}",
    response_model=schemas.Submission,
    responses=problem_responses(401, 403, 404),
)
async def get_submission(
    submission_id: SubmissionId, tenant: MemberOf, session: SessionDep
) -> schemas.Submission:
    """One submission: admins, and the members of its team."""
    row = await service.get_submission(session, org_id=tenant.org_id, submission_id=submission_id)
    await service.ensure_sees_team(session, tenant=tenant, team_id=row.team_id)
    return service.to_schema(row, show_who=tenant.is_admin)


@router.post(
    "/submission/{submission_id}/approve",
    response_model=schemas.Submission,
    responses=problem_responses(400, 401, 403, 404, 409, 413, 415, 422),
)
async def approve_submission(
    submission_id: SubmissionId,
    request: Request,
    tenant: AdminOf,
    session: SessionDep,
    data: Annotated[schemas.Approval | None, Body()] = None,
) -> schemas.Submission:
    """Approve the work: the team completes the task, as `POST /team/{id}/progress`
    records it, with `CompletedAt` the time it was submitted, `MemberId` the submitter
    and `RecordedBy` you. The submitter is e-mailed (when the service sends e-mail).
    409 when it is not pending (decided already, by you or another admin) or the team
    is archived."""
    row = await service.decide(
        session,
        org_id=tenant.org_id,
        submission_id=submission_id,
        approve=True,
        comment=None if data is None else data.comment,
        decided_by=tenant.caller.subject,
        notify=mail.is_configured(app_state(request).settings),
    )
    return service.to_schema(row)


@router.post(
    "/submission/{submission_id}/reject",
    response_model=schemas.Submission,
    responses=problem_responses(400, 401, 403, 404, 409, 413, 415, 422),
)
async def reject_submission(
    submission_id: SubmissionId,
    request: Request,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.Rejection,
) -> schemas.Submission:
    """Send the work back with a `Comment` (required): the team may submit again. The
    submitter is e-mailed (when the service sends e-mail). 409 when it is not pending."""
    row = await service.decide(
        session,
        org_id=tenant.org_id,
        submission_id=submission_id,
        approve=False,
        comment=data.comment,
        decided_by=tenant.caller.subject,
        notify=mail.is_configured(app_state(request).settings),
    )
    return service.to_schema(row)

"""Submission rules: a team's member submits work for a ``Review`` task, an admin
approves or rejects it.

An approval records the completion through the progress ledger, the very write of
``POST /team/{id}/progress`` (``progress.record.complete``): the same refusals, score
step, history row, outbox event and read-model version, with ``CompletedAt`` the time
the work was submitted, ``MemberId`` the submitter and ``RecordedBy`` the admin.

Lock order (PostgreSQL): the team's row, then the submission's, then the
organization's read-model version, in every write here as in the ledger, so that a
submission and a decision on the same team never wait for each other in a circle. A
decision is a conditional update (``state = 'Pending'``): of two admins deciding at
once, one changes the row and the other finds it decided (409).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit, events
from questline.disciplines import checks
from questline.disciplines.models import CheckKind
from questline.members import callers
from questline.members.models import TeamMembership
from questline.progress import locks, record
from questline.progress.models import TaskCompletion
from questline.progress.schemas import ProgressCreate
from questline.readmodel import moved
from questline.readmodel.versions import bump
from questline.storage.db import utcnow
from questline.submissions import notices, schemas
from questline.submissions.models import Submission, SubmissionState
from questline.teams.models import Team
from questline.teams.service import ensure_active, get_team
from questline.web.access import Tenant
from questline.web.errors import (
    AlreadyCompleted,
    Conflict,
    FieldError,
    Forbidden,
    Unprocessable,
    not_found,
)
from questline.web.pagination import PageRequest, keyset_page, time_then_id


class SubmissionPending(Conflict):
    slug, title = "submission-pending", "A submission is pending"


class AlreadyDecided(Conflict):
    slug, title = "submission-decided", "The submission was decided"


def to_schema(row: Submission, *, show_who: bool = True) -> schemas.Submission:
    """The submission as the API shows it; members get it without the reviewer's
    subject (``DecidedBy``), as they get adjustments without who made them."""
    shown = schemas.Submission.model_validate(row)
    return shown if show_who else shown.model_copy(update={"decided_by": None})


async def _review_task(
    session: AsyncSession, *, org_id: uuid.UUID, task_id: uuid.UUID
) -> checks.TaskCheck:
    """The task when the organization sees it (404) and it is checked by review (422)."""
    check = await checks.task_check(session, org_id=org_id, task_id=task_id)
    if check is None:
        raise not_found("task")
    if check.kind is not CheckKind.REVIEW:
        raise Unprocessable(
            f"This task's check is {check.kind.value}, not Review: there is no work to submit.",
            errors=[FieldError(field="TaskId", message="Name a task whose Check is Review.")],
        )
    return check


# Who may act ----------------------------------------------------------------------


async def submitter(session: AsyncSession, *, tenant: Tenant, team_id: uuid.UUID) -> uuid.UUID:
    """The caller's member, when it belongs to the team (``members.callers``: 403 for a
    member caller without one). Only a team's members submit its work: an admin whose
    e-mail names none of the team's members is refused too (403)."""
    member_id = await callers.acting_member(session, caller=tenant.caller, team_id=team_id)
    if member_id is None:
        raise Forbidden(
            "Only a member of the team submits its work; an admin reviews it. Your "
            "sign-in (its e-mail) names no member of this team."
        )
    return member_id


async def ensure_sees_team(session: AsyncSession, *, tenant: Tenant, team_id: uuid.UUID) -> None:
    """Admins see every team's submissions; a member only its own teams' (else 403)."""
    if not tenant.is_admin:
        await callers.acting_member(session, caller=tenant.caller, team_id=team_id)


async def _is_member_of(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, member_id: uuid.UUID
) -> bool:
    found = await session.scalar(
        select(TeamMembership.member_id).where(
            TeamMembership.organization_id == org_id,
            TeamMembership.team_id == team_id,
            TeamMembership.member_id == member_id,
        )
    )
    return found is not None


# Submitting -----------------------------------------------------------------------


async def _is_completed(session: AsyncSession, *, team: Team, task_id: uuid.UUID) -> bool:
    found = await session.scalar(
        select(TaskCompletion.task_id).where(
            TaskCompletion.organization_id == team.organization_id,
            TaskCompletion.team_id == team.id,
            TaskCompletion.task_id == task_id,
        )
    )
    return found is not None


async def _pending(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> Submission | None:
    found: Submission | None = await session.scalar(
        select(Submission).where(
            Submission.organization_id == org_id,
            Submission.team_id == team_id,
            Submission.task_id == task_id,
            Submission.state == SubmissionState.PENDING,
        )
    )
    return found


async def submit(
    session: AsyncSession,
    *,
    team: Team,
    member_id: uuid.UUID,
    data: schemas.SubmissionCreate,
) -> Submission:
    """A new pending submission. ``team`` is locked by the caller. Refusals, in order:
    409 archived team, 404 task, 422 not a ``Review`` task, 409 closed level, 409
    completed, 409 one pending already."""
    ensure_active(team, "submissions")
    org_id = team.organization_id
    task = await _review_task(session, org_id=org_id, task_id=data.task_id)
    await locks.ensure_open(session, org_id=org_id, team_id=team.id, task=task)
    if await _is_completed(session, team=team, task_id=task.task_id):
        raise AlreadyCompleted("The team has completed this task already: nothing to submit.")
    pending = await _pending(session, org_id=org_id, team_id=team.id, task_id=task.task_id)
    if pending is not None:
        raise SubmissionPending(
            f"Submission {pending.id} of this task is waiting for review; "
            "submit again once it is decided."
        )
    row = Submission(
        organization_id=org_id,
        team_id=team.id,
        task_id=task.task_id,
        discipline_id=task.discipline_id,
        member_id=member_id,
        text=data.text,
        url=data.url,
        state=SubmissionState.PENDING,
    )
    session.add(row)
    await session.flush()
    await events.record(
        session, organization_id=org_id, type="submission.created", data=to_schema(row)
    )
    await bump(session, org_id, moved.on_team()(team.id))  # its overview shows it pending
    return row


# Reading --------------------------------------------------------------------------


async def get_submission(
    session: AsyncSession, *, org_id: uuid.UUID, submission_id: uuid.UUID
) -> Submission:
    found: Submission | None = await session.scalar(
        select(Submission).where(
            Submission.organization_id == org_id, Submission.id == submission_id
        )
    )
    if found is None:
        raise not_found("submission")
    return found


@dataclass(frozen=True, slots=True)
class Filters:
    state: SubmissionState | None = None
    team_id: uuid.UUID | None = None
    task_id: uuid.UUID | None = None


async def list_submissions(
    session: AsyncSession, *, org_id: uuid.UUID, filters: Filters, page: PageRequest
) -> Sequence[Submission]:
    """The organization's submissions, oldest first (keyset paging on the time they were
    submitted, then id)."""
    query = select(Submission).where(Submission.organization_id == org_id)
    if filters.state is not None:
        query = query.where(Submission.state == filters.state)
    if filters.team_id is not None:
        query = query.where(Submission.team_id == filters.team_id)
    if filters.task_id is not None:
        query = query.where(Submission.task_id == filters.task_id)
    query = keyset_page(query, page, *time_then_id(Submission.submitted_at, Submission.id))
    return (await session.scalars(query)).all()


def cursor_of(row: Submission) -> list[str]:
    return [row.submitted_at.isoformat(), str(row.id)]


async def pending_by_task(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID
) -> dict[uuid.UUID, uuid.UUID]:
    """The team's pending submission per task (the overview's ``PendingSubmission``)."""
    rows = await session.execute(
        select(Submission.task_id, Submission.id).where(
            Submission.organization_id == org_id,
            Submission.team_id == team_id,
            Submission.state == SubmissionState.PENDING,
        )
    )
    return {uuid.UUID(str(task_id)): uuid.UUID(str(sid)) for task_id, sid in rows.all()}


# Deciding -------------------------------------------------------------------------


async def decide(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    submission_id: uuid.UUID,
    approve: bool,
    comment: str | None,
    decided_by: str,
    notify: bool,
) -> Submission:
    """Approve (the completion recorded) or reject a pending submission. 404 unknown,
    409 decided already (also when another admin decided it meanwhile); approving: 409
    for an archived team, as the progress write refuses it. ``notify``: e-mail the
    submitter (when the service sends e-mail)."""
    found = await get_submission(session, org_id=org_id, submission_id=submission_id)
    team = await get_team(session, org_id=org_id, team_id=found.team_id, for_update=True)
    if approve and found.state is SubmissionState.PENDING:
        ensure_active(team, "progress")
    now = utcnow()
    state = SubmissionState.APPROVED if approve else SubmissionState.REJECTED
    changed = await session.execute(
        update(Submission)
        .where(
            Submission.organization_id == org_id,
            Submission.id == submission_id,
            Submission.state == SubmissionState.PENDING,
        )
        .values(state=state, decided_at=now, decided_by=decided_by[:255], comment=comment)
        .execution_options(synchronize_session=False)
    )
    if getattr(changed, "rowcount", 0) != 1:
        raise AlreadyDecided("This submission was decided already: it is not pending.")
    await session.refresh(found)
    if approve:
        credited = await _is_member_of(
            session, org_id=org_id, team_id=team.id, member_id=found.member_id
        )
        await record.complete(
            session,
            org_id=org_id,
            team_id=team.id,
            data=ProgressCreate.model_validate(
                {
                    "TaskId": found.task_id,
                    "CompletedAt": found.submitted_at,
                    # A submitter who left the team since is credited to nobody: the
                    # ledger credits only the team's members.
                    "MemberId": found.member_id if credited else None,
                }
            ),
            recorded_by=decided_by,
        )
    else:
        # The team's overview no longer shows it pending.
        await bump(session, org_id, moved.on_team()(team.id))
    decided = to_schema(found)
    await audit.record(
        session,
        organization_id=org_id,
        action=f"submission.{state.value.lower()}",
        target=("submission", found.id),
        before={"State": SubmissionState.PENDING.value},
        after={
            "State": state.value,
            "TeamId": found.team_id,
            "TaskId": found.task_id,
            "MemberId": found.member_id,
            "Comment": comment,
        },
    )
    await events.record(
        session, organization_id=org_id, type=f"submission.{state.value.lower()}", data=decided
    )
    if notify:
        await notices.queue_decision(session, submission=found, team=team)
    return found

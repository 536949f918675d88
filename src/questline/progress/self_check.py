"""A member marks a ``Self`` task done through ``POST /team/{id}/progress``: the route is
progress's, and so is this rule; the learners' other actions (answers, hints) live in
``questline.learners``, which builds on progress."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines.checks import task_check
from questline.disciplines.models import CheckKind
from questline.members.callers import acting_member
from questline.progress import record
from questline.progress import schemas as progress_schemas
from questline.progress.ledger import Recorded
from questline.progress.locks import ensure_open
from questline.teams.service import ensure_active, get_team
from questline.web.access import Tenant
from questline.web.errors import FieldError, Forbidden, Unprocessable, not_found


def learner_completion(
    task_id: uuid.UUID, member_id: uuid.UUID | None
) -> progress_schemas.ProgressCreate:
    """The completion a learner's action records: now, by the caller's member."""
    return progress_schemas.ProgressCreate.model_validate(
        {"TaskId": task_id, "MemberId": member_id}
    )


async def complete_self(
    session: AsyncSession,
    *,
    tenant: Tenant,
    team_id: uuid.UUID,
    data: progress_schemas.ProgressCreate,
) -> Recorded:
    """A member marks a ``Self`` task complete (``POST /team/{id}/progress``): the
    completion names the caller's member; any other kind is 403 to a member."""
    if data.completed_at is not None or data.member_id is not None:
        errors = [
            FieldError(field=name, message="Set by admins only.")
            for name, value in (("CompletedAt", data.completed_at), ("MemberId", data.member_id))
            if value is not None
        ]
        raise Unprocessable("A member's completion is now and names the member.", errors=errors)
    team = await get_team(session, org_id=tenant.org_id, team_id=team_id, for_update=True)
    member_id = await acting_member(session, caller=tenant.caller, team_id=team_id)
    ensure_active(team, "progress")
    task = await task_check(session, org_id=tenant.org_id, task_id=data.task_id)
    if task is None:
        raise not_found("task")
    if task.kind is not CheckKind.SELF:
        raise Forbidden(
            f"The task is completed by {task.kind.value}: a member marks only Self tasks "
            "complete (answers: POST /team/{id}/attempts)."
        )
    await ensure_open(session, org_id=tenant.org_id, team_id=team_id, task=task)
    return await record.complete(
        session,
        org_id=tenant.org_id,
        team_id=team_id,
        data=learner_completion(task.task_id, member_id),
        recorded_by=tenant.caller.subject,
    )

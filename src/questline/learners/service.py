"""What a team's members do themselves: answer (``Answer`` tasks), mark done (``Self``),
unlock hints. Every completion goes through the progress ledger (``progress.record``),
as an admin's does, and so does an answer (``progress.ledger.Answering``: one more kind
of ledger write, group-committed like a progress write); a hint's cost is a step of the
score history (``scores.apply_steps``).

The refusals come in one order for every action: 404 team, 403 not the team's member,
409 archived team, 404 task, the task's kind (422, or 403 for a member's self-check of
another kind), 409 locked level, then the action's own (409 done, 409 no attempts left,
429 too fast). A refused attempt is neither stored nor counted.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from typing import Any

from fastapi import Response
from sqlalchemy import Select, bindparam, func, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit, events
from questline.config import Settings
from questline.disciplines.checks import (
    TaskCheck,
    answer_keys,
    task_check,
    task_check_of,
    task_check_query,
)
from questline.learners import schemas
from questline.members.callers import (
    acting_as,
    acting_member,
    best_named,
    named_members,
    named_values,
)
from questline.progress import record
from questline.progress.learner_records import SEALED_AS, HintUnlock, TaskAttempt
from questline.progress.ledger import Answered, Answering
from questline.progress.locks import ensure_open
from questline.progress.models import ScoreChange
from questline.progress.scores import Step, apply_steps
from questline.readmodel import moved
from questline.readmodel.versions import bump
from questline.storage.db import utcnow
from questline.teams.models import Team
from questline.teams.service import ensure_active, get_team
from questline.timeformat import rfc3339
from questline.web.access import Tenant
from questline.web.errors import (
    FieldError,
    Unprocessable,
    not_found,
)
from questline.web.pagination import PageRequest, keyset_page


@dataclass(frozen=True, slots=True)
class Acting:
    """A learner action's team, task and member, every refusal before its own passed."""

    team: Team
    task: TaskCheck
    member_id: uuid.UUID | None


TASK_COLUMNS = len(task_check_query().selected_columns)


@functools.cache
def _acting_statement() -> Select[*tuple[Any, ...]]:
    """``_acting``'s look-up, built once (composing it cost more than running it): the
    team's row (locked), joined with the task's check and the members the caller's
    identity names (``task_check_query``, ``named_members``: their rules, their
    values)."""
    task_row = task_check_query().subquery("task")
    named = named_members().subquery("named")
    return (
        select(Team, *task_row.c, *named.c)
        .select_from(Team)
        .outerjoin(task_row, true())
        .outerjoin(named, true())
        .where(Team.organization_id == bindparam("team_org"), Team.id == bindparam("team_id"))
        .with_for_update(of=Team)
    )


async def _acting(
    session: AsyncSession,
    *,
    tenant: Tenant,
    team_id: uuid.UUID,
    task_id: uuid.UUID,
    action: str,
) -> Acting:
    """The team (locked: one team's learner actions run one at a time), the caller's
    member, the task, with the refusals every action shares. One statement finds all
    three: the team's row joined with the task's check and the members the caller's
    identity names (a row each; one with neither)."""
    values = {
        "team_org": tenant.org_id,
        "team_id": team_id,
        "task_org": tenant.org_id,
        "task_id": task_id,
        **named_values(tenant.caller, team_id),
    }
    found = (await session.execute(_acting_statement(), values)).all()
    if not found:
        raise not_found("team")
    team, after_task = found[0][0], 1 + TASK_COLUMNS
    members = [row[after_task:] for row in found if row[after_task] is not None]
    member_id = acting_as(tenant.caller, best_named(tenant.caller, members))
    ensure_active(team, action)
    task = task_check_of(found[0][1:after_task])
    if task is None:
        raise not_found("task")
    await ensure_open(session, org_id=tenant.org_id, team_id=team_id, task=task)
    return Acting(team, task, member_id)


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    result: schemas.AttemptResult
    created: bool
    """A right answer that completed the task (201)."""


def answering(
    *, tenant: Tenant, team_id: uuid.UUID, data: schemas.AttemptCreate, settings: Settings
) -> Answering:
    """The ledger's write of an answer (``progress.ledger.Plan._answer`` has its rules)."""
    return Answering(
        org_id=tenant.org_id,
        team_id=team_id,
        task_id=data.task_id,
        answer=data.answer,
        caller=tenant.caller,
        keys=functools.partial(answer_keys, settings),
        per_minute=settings.attempts_per_minute,
    )


def attempt_response(outcome: AttemptOutcome) -> Response:
    """201 with the completion when right, 200 when wrong."""
    return Response(
        content=outcome.result.model_dump_json(by_alias=True),
        status_code=201 if outcome.created else 200,
        media_type="application/json",
    )


def attempt_outcome(answered: Answered) -> AttemptOutcome:
    """The response of an answer the ledger counted."""
    result = schemas.AttemptResult(
        correct=answered.correct,
        attempts_left=answered.attempts_left,
        completion=answered.completion,
    )
    return AttemptOutcome(result, answered.correct)


async def submit_attempt(
    session: AsyncSession,
    *,
    tenant: Tenant,
    team_id: uuid.UUID,
    data: schemas.AttemptCreate,
    settings: Settings,
) -> AttemptOutcome:
    """Check the answer, in the session's transaction (a batch of one of the progress
    ledger, whose group commit answers the plain case before routing): a right one
    completes the task with the caller's member as ``MemberId``."""
    write = answering(tenant=tenant, team_id=team_id, data=data, settings=settings)
    return attempt_outcome(await record.answer(session, write))


def _attempt_cursor(row: TaskAttempt) -> list[str]:
    return [str(row.id)]


async def list_attempts(
    session: AsyncSession,
    *,
    tenant: Tenant,
    team_id: uuid.UUID,
    page: PageRequest,
    settings: Settings,
) -> tuple[list[schemas.Attempt], list[str] | None]:
    """The team's counted attempts, oldest first; admins also read each answer."""
    await get_team(session, org_id=tenant.org_id, team_id=team_id)
    await acting_member(session, caller=tenant.caller, team_id=team_id)
    query = select(TaskAttempt).where(
        TaskAttempt.organization_id == tenant.org_id, TaskAttempt.team_id == team_id
    )
    query = keyset_page(query, page, (TaskAttempt.id, uuid.UUID))
    rows = list((await session.scalars(query)).all())
    more = page.limit is not None and len(rows) > page.limit
    rows = rows[: page.limit] if page.limit is not None else rows
    sealer = answer_keys(settings, tenant.org_id).sealer if tenant.is_admin else None
    items = [
        schemas.Attempt(
            task_id=row.task_id,
            member_id=row.member_id,
            at=row.at,
            correct=row.correct,
            answer=None
            if sealer is None
            else sealer.unseal(row.answer, organization=tenant.org_id, purpose=SEALED_AS),
        )
        for row in rows
    ]
    return items, (_attempt_cursor(rows[-1]) if more and rows else None)


def _unlocked(row: HintUnlock, text: str, score: int | None) -> schemas.UnlockedHint:
    return schemas.UnlockedHint(
        task_id=row.task_id,
        index=row.hint_index,
        text=text,
        cost=row.cost,
        unlocked_at=row.unlocked_at,
        unlocked_by=row.unlocked_by,
        member_id=row.member_id,
        score=score,
    )


@dataclass(frozen=True, slots=True)
class HintOutcome:
    hint: schemas.UnlockedHint
    created: bool


async def unlock_hint(
    session: AsyncSession, *, tenant: Tenant, team_id: uuid.UUID, data: schemas.HintUnlockCreate
) -> HintOutcome:
    """Show the hint to the team; the first unlock costs its ``Cost`` (a step of the
    score history), a repeat nothing."""
    acting = await _acting(
        session, tenant=tenant, team_id=team_id, task_id=data.task_id, action="hints"
    )
    task = acting.task
    if data.index >= len(task.hints):
        raise Unprocessable(
            f"The task has {len(task.hints)} hints.",
            errors=[FieldError(field="Index", message="Name one of the task's hints (0-based).")],
        )
    hint = task.hints[data.index]
    existing = await session.get(HintUnlock, (tenant.org_id, team_id, task.task_id, data.index))
    if existing is not None:
        return HintOutcome(_unlocked(existing, hint["Text"], acting.team.score), False)
    now = utcnow()
    row = HintUnlock(
        organization_id=tenant.org_id,
        team_id=team_id,
        task_id=task.task_id,
        hint_index=data.index,
        cost=int(hint["Cost"]),
        unlocked_at=now,
        unlocked_by=tenant.caller.subject,
        member_id=acting.member_id,
    )
    session.add(row)
    await session.flush()
    score = acting.team.score
    if row.cost:
        [score] = await apply_steps(
            session,
            steps=[
                Step(
                    organization_id=tenant.org_id,
                    team_id=team_id,
                    task_id=task.task_id,
                    discipline_id=task.discipline_id,
                    kind=ScoreChange.HINT_UNLOCKED,
                    delta=-row.cost,
                    at=now,
                )
            ],
        )
    unlocked = _unlocked(row, hint["Text"], score)
    # The hint's text stays with the team: events and the audit log name the hint.
    summary = {
        "TeamId": team_id,
        "TaskId": task.task_id,
        "Index": data.index,
        "Cost": row.cost,
        "UnlockedAt": rfc3339(now),
        "UnlockedBy": row.unlocked_by,
        "MemberId": acting.member_id,
        "Score": score,
    }
    await events.record(session, organization_id=tenant.org_id, type="hint.unlocked", data=summary)
    await audit.record(
        session,
        organization_id=tenant.org_id,
        action="hint.unlocked",
        target=("team", team_id),
        after={"TaskId": task.task_id, "Index": data.index, "Cost": row.cost, "Score": score},
    )
    # The team's unlocked hints, and its score when the hint cost something.
    paid = (moved.SCORES, moved.RANKS) if row.cost else ()
    changed = moved.on_team(*paid)(team_id)
    await bump(session, tenant.org_id, changed)
    return HintOutcome(unlocked, True)


async def list_hints(
    session: AsyncSession, *, tenant: Tenant, team_id: uuid.UUID
) -> list[schemas.UnlockedHint]:
    """The team's unlocked hints with their texts, in the order unlocked."""
    await get_team(session, org_id=tenant.org_id, team_id=team_id)
    await acting_member(session, caller=tenant.caller, team_id=team_id)
    rows = (
        await session.scalars(
            select(HintUnlock)
            .where(HintUnlock.organization_id == tenant.org_id, HintUnlock.team_id == team_id)
            .order_by(HintUnlock.unlocked_at, HintUnlock.task_id, HintUnlock.hint_index)
        )
    ).all()
    texts = await _hint_texts(session, tenant.org_id, {row.task_id for row in rows})
    return [_unlocked(row, texts.get((row.task_id, row.hint_index), ""), None) for row in rows]


async def _hint_texts(
    session: AsyncSession, org_id: uuid.UUID, task_ids: set[uuid.UUID]
) -> dict[tuple[uuid.UUID, int], str]:
    """The current texts of the tasks' hints (a hint edited since reads as it is now;
    a removed one as empty)."""
    texts: dict[tuple[uuid.UUID, int], str] = {}
    for task_id in task_ids:
        task = await task_check(session, org_id=org_id, task_id=task_id)
        for index, hint in enumerate(task.hints if task else ()):
            texts[(task_id, index)] = str(hint["Text"])
    return texts


async def unlocked_indexes(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID
) -> dict[uuid.UUID, list[int]]:
    rows = await session.execute(
        select(HintUnlock.task_id, HintUnlock.hint_index)
        .where(HintUnlock.organization_id == org_id, HintUnlock.team_id == team_id)
        .order_by(HintUnlock.task_id, HintUnlock.hint_index)
    )
    found: dict[uuid.UUID, list[int]] = {}
    for task_id, index in rows:
        found.setdefault(task_id, []).append(int(index))
    return found


async def attempts_by_task(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID
) -> dict[uuid.UUID, int]:
    rows = await session.execute(
        select(TaskAttempt.task_id, func.count())
        .where(TaskAttempt.organization_id == org_id, TaskAttempt.team_id == team_id)
        .group_by(TaskAttempt.task_id)
    )
    return {row[0]: int(row[1]) for row in rows}


def attempts_left(max_attempts: int | None, used: int) -> int | None:
    return None if max_attempts is None else max(0, max_attempts - used)

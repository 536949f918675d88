"""Adjustment rules: making, listing and withdrawing a team's manual score changes.

An adjustment is a step of the team's score like a completion's (``progress.scores``,
the ledger's ``TeamState.step``): the score and the time it was reached (the
leaderboard's tie-breaker) move in the same transaction as the history row, the outbox
event (``team.adjusted``, ``team.adjustment_withdrawn``) and the read model's version.
A withdrawal is a negative step at the time it is made, as for a completion.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.adjustments import schemas
from questline.adjustments.models import MAX_SCORE, ScoreAdjustment
from questline.progress.ledger import checked_time
from questline.progress.models import ScoreChange
from questline.progress.scores import Step, apply_steps
from questline.readmodel import moved
from questline.readmodel.versions import bump
from questline.storage.db import utcnow
from questline.teams.models import Team
from questline.teams.service import audit_team, ensure_active
from questline.web.errors import Conflict, FieldError, Unprocessable
from questline.web.lookups import one_or_not_found
from questline.web.pagination import PageRequest, keyset_page, time_then_id


def to_schema(
    row: ScoreAdjustment, *, score: int | None = None, show_who: bool = True
) -> schemas.Adjustment:
    """The adjustment as the API shows it; members get it without who made or withdrew
    it (``RecordedBy``, ``WithdrawnBy``), as they get submissions without the reviewer."""
    shown = schemas.Adjustment.model_validate(row)
    update: dict[str, object] = {} if score is None else {"score": score}
    if not show_who:
        update |= {"recorded_by": None, "withdrawn_by": None}
    return shown.model_copy(update=update) if update else shown


def _check_range(team: Team, delta: int) -> None:
    """The score stays within its column (BIGINT): refused (422), never a failed write."""
    if not -MAX_SCORE <= team.score + delta <= MAX_SCORE:
        raise Unprocessable(
            "This change would take the team's score beyond what a score can hold "
            f"(±{MAX_SCORE:,}).",
            errors=[FieldError(field="Points", message="Too large for the team's score.")],
        )


async def _step(session: AsyncSession, team: Team, row: ScoreAdjustment, kind: ScoreChange) -> int:
    """The adjustment's step of the team's score (``apply_steps`` refreshes ``team``)."""
    adding = kind is ScoreChange.ADJUSTED
    [score] = await apply_steps(
        session,
        steps=[
            Step(
                organization_id=team.organization_id,
                team_id=team.id,
                task_id=None,
                discipline_id=None,
                kind=kind,
                delta=row.points if adding else -row.points,
                at=row.at if adding else (row.withdrawn_at or utcnow()),
                adjustment_id=row.id,
            )
        ],
    )
    return score


def _audited(row: ScoreAdjustment, score: int) -> dict[str, object]:
    return {
        "AdjustmentId": row.id,
        "Points": row.points,
        "Reason": row.reason,
        "At": row.at,
        "Score": score,
    }


STEPPED = moved.on_team(moved.SCORES, moved.RANKS)
"""What an adjustment moves: its team's score and history, so the rankings and any
team's rank too."""


async def adjust(
    session: AsyncSession, *, team: Team, data: schemas.AdjustmentCreate, recorded_by: str
) -> schemas.Adjustment:
    """Add ``data.points`` to the team's score at ``data.at`` (default now). ``team`` is
    locked by the caller (``get_team(for_update=True)``). 409 for an archived team, 422
    for a future time or a score out of range."""
    ensure_active(team, "adjustments")
    now = utcnow()
    at = checked_time(data.at, now, "At")
    _check_range(team, data.points)
    row = ScoreAdjustment(
        organization_id=team.organization_id,
        team_id=team.id,
        points=data.points,
        reason=data.reason,
        at=at,
        recorded_by=recorded_by,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    score = await _step(session, team, row, ScoreChange.ADJUSTED)
    made = to_schema(row, score=score)
    await audit_team(session, team, "team.adjusted", None, _audited(row, score))
    await events.record(
        session, organization_id=team.organization_id, type="team.adjusted", data=made
    )
    await bump(session, team.organization_id, STEPPED(team.id))
    return made


async def get_adjustment(
    session: AsyncSession, *, team: Team, adjustment_id: uuid.UUID, for_update: bool = False
) -> ScoreAdjustment:
    query = select(ScoreAdjustment).where(
        ScoreAdjustment.organization_id == team.organization_id,
        ScoreAdjustment.team_id == team.id,
        ScoreAdjustment.id == adjustment_id,
    )
    return await one_or_not_found(session, query, kind="adjustment", for_update=for_update)


async def withdraw(
    session: AsyncSession, *, team: Team, adjustment_id: uuid.UUID, withdrawn_by: str
) -> schemas.Adjustment:
    """Take an adjustment back: minus its points now, and it no longer counts in any
    window. 404 unknown, 409 already withdrawn or the team archived."""
    row = await get_adjustment(session, team=team, adjustment_id=adjustment_id, for_update=True)
    if row.withdrawn_at is not None:
        raise Conflict("This adjustment was withdrawn already.")
    ensure_active(team, "adjustments")
    _check_range(team, -row.points)
    row.withdrawn_at = utcnow()
    row.withdrawn_by = withdrawn_by
    await session.flush()
    score = await _step(session, team, row, ScoreChange.ADJUSTMENT_WITHDRAWN)
    withdrawn = to_schema(row, score=score)
    await audit_team(
        session,
        team,
        "team.adjustment_withdrawn",
        {"AdjustmentId": row.id, "Points": row.points, "Score": score + row.points},
        {"AdjustmentId": row.id, "Points": 0, "Score": score},
    )
    await events.record(
        session,
        organization_id=team.organization_id,
        type="team.adjustment_withdrawn",
        data=withdrawn,
    )
    await bump(session, team.organization_id, STEPPED(team.id))
    return withdrawn


async def list_adjustments(
    session: AsyncSession, *, team: Team, page: PageRequest
) -> Sequence[ScoreAdjustment]:
    """The team's adjustments, withdrawn ones too, by ``At`` then id (keyset paging)."""
    query = select(ScoreAdjustment).where(
        ScoreAdjustment.organization_id == team.organization_id,
        ScoreAdjustment.team_id == team.id,
    )
    query = keyset_page(query, page, *time_then_id(ScoreAdjustment.at, ScoreAdjustment.id))
    return (await session.scalars(query)).all()


def cursor_of(row: ScoreAdjustment) -> list[str]:
    return [row.at.isoformat(), str(row.id)]

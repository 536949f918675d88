"""The score ledger: every change of a team's score goes through here.

A change is one atomic ``UPDATE teams SET score = score + :delta`` (no read-modify-write,
so concurrent completions never lose an update) that also bumps the team's ``version``
(its ETag changes) and its ``score_reached_at``, followed by one appended row of
``score_events``. History is never rewritten.

``score_reached_at`` is the leaderboard's tie-breaker: the time of the team's latest
change on the timeline (``max(at)`` of its history), or its creation while it has none.
A completion sent with a past ``CompletedAt`` therefore counts at that time.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, and_, case, exists, insert, literal, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from questline.progress.models import ScoreChange, ScoreEvent
from questline.storage.db import UTCDateTime, new_id, utcnow
from questline.teams.models import Team

_teams = cast(Table, Team.__table__)


@dataclass(frozen=True, slots=True)
class Step:
    """One change of one team's score, caused by one task."""

    organization_id: uuid.UUID
    team_id: uuid.UUID
    task_id: uuid.UUID
    discipline_id: uuid.UUID
    kind: ScoreChange
    delta: int
    at: dt.datetime


async def lock_teams(session: AsyncSession, *, keys: Sequence[tuple[uuid.UUID, uuid.UUID]]) -> None:
    """Lock team rows (PostgreSQL) in one global order, before touching their progress.

    The progress endpoints lock their team first too; taking team locks before
    completion locks everywhere keeps concurrent changes from deadlocking.
    """
    by_org: dict[uuid.UUID, list[uuid.UUID]] = {}
    for org_id, team_id in sorted(set(keys)):
        by_org.setdefault(org_id, []).append(team_id)
    for org_id, team_ids in by_org.items():
        await session.execute(
            select(_teams.c.id)
            .where(_teams.c.organization_id == org_id, _teams.c.id.in_(team_ids))
            .order_by(_teams.c.id)
            .with_for_update()
        )


async def _add_to_score(
    session: AsyncSession,
    *,
    organization_id: uuid.UUID,
    team_id: uuid.UUID,
    delta: int,
    completions: int,
    at: dt.datetime,
) -> int:
    """Apply ``delta`` atomically; returns the score after it."""
    has_history = exists().where(
        ScoreEvent.organization_id == organization_id, ScoreEvent.team_id == team_id
    )
    reached = case(
        (and_(has_history, _teams.c.score_reached_at > at), _teams.c.score_reached_at),
        else_=literal(at, UTCDateTime()),
    )
    result = await session.execute(
        update(_teams)
        .where(_teams.c.organization_id == organization_id, _teams.c.id == team_id)
        .values(
            score=_teams.c.score + delta,
            tasks_completed=_teams.c.tasks_completed + completions,
            version=_teams.c.version + 1,
            score_reached_at=reached,
            updated_at=utcnow(),
        )
        .returning(
            _teams.c.score,
            _teams.c.tasks_completed,
            _teams.c.version,
            _teams.c.score_reached_at,
            _teams.c.updated_at,
        )
    )
    row = result.one()
    _refresh_loaded_team(session, (organization_id, team_id), row._asdict())
    return int(row.score)


async def apply_steps(session: AsyncSession, *, steps: Sequence[Step]) -> list[int]:
    """Apply the steps in order; one UPDATE per team, one INSERT for the history.

    Returns the team's score after each step, in the order given. The caller has
    locked the teams (see ``lock_teams``) when it changes several.
    """
    if not steps:
        return []
    totals: dict[tuple[uuid.UUID, uuid.UUID], int] = {}
    counts: dict[tuple[uuid.UUID, uuid.UUID], int] = {}
    latest: dict[tuple[uuid.UUID, uuid.UUID], dt.datetime] = {}
    for step in steps:
        key = (step.organization_id, step.team_id)
        totals[key] = totals.get(key, 0) + step.delta
        counts[key] = counts.get(key, 0) + (1 if step.kind is ScoreChange.COMPLETED else -1)
        latest[key] = max(latest.get(key, step.at), step.at)
    running: dict[tuple[uuid.UUID, uuid.UUID], int] = {}
    for key, total in totals.items():
        after = await _add_to_score(
            session,
            organization_id=key[0],
            team_id=key[1],
            delta=total,
            completions=counts[key],
            at=latest[key],
        )
        running[key] = after - total
    scores_after: list[int] = []
    rows = []
    recorded_at = utcnow()
    for step in steps:
        key = (step.organization_id, step.team_id)
        running[key] += step.delta
        scores_after.append(running[key])
        rows.append(
            {
                "organization_id": step.organization_id,
                "id": new_id(),
                "team_id": step.team_id,
                "task_id": step.task_id,
                "discipline_id": step.discipline_id,
                "kind": step.kind,
                "delta": step.delta,
                "score_after": running[key],
                "at": step.at,
                "recorded_at": recorded_at,
            }
        )
    await session.execute(insert(ScoreEvent), rows)
    return scores_after


def _refresh_loaded_team(
    session: AsyncSession, key: tuple[uuid.UUID, uuid.UUID], values: dict[str, Any]
) -> None:
    """A Team this session already loaded would keep its old score and version (and
    a later ORM flush of it would fail its version check): give it the new values."""
    loaded = session.identity_map.get(identity_key(Team, key))
    if loaded is not None:
        for name, value in values.items():
            set_committed_value(loaded, name, value)

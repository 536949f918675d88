"""Score steps applied through the ORM session: the progress taken back when a
discipline's tasks are removed (``hooks``), and an admin's adjustments
(``questline.adjustments``). Each step follows the ledger's rule
(``ledger.TeamState.step``), like every other change of a team's score; the teams are
locked first, so the scores computed here are the stored ones.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, exists, insert, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from questline.progress.ledger import TeamState, history_row
from questline.progress.models import COMPLETIONS_STEP, ScoreChange, ScoreEvent
from questline.storage.db import utcnow
from questline.teams.models import Team

_teams = cast(Table, Team.__table__)


@dataclass(frozen=True, slots=True)
class Step:
    """One change of one team's score, caused by one task (or one adjustment)."""

    organization_id: uuid.UUID
    team_id: uuid.UUID
    task_id: uuid.UUID | None
    discipline_id: uuid.UUID | None
    kind: ScoreChange
    delta: int
    at: dt.datetime
    adjustment_id: uuid.UUID | None = None


async def lock_teams(session: AsyncSession, *, keys: Sequence[tuple[uuid.UUID, uuid.UUID]]) -> None:
    """Lock team rows (PostgreSQL) in one global order, before touching their progress.

    The progress writes lock their teams before completions too; taking team locks
    before completion locks everywhere keeps concurrent changes from deadlocking.
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


async def _team_states(
    session: AsyncSession, keys: Sequence[tuple[uuid.UUID, uuid.UUID]]
) -> dict[tuple[uuid.UUID, uuid.UUID], TeamState]:
    has_history = (
        exists()
        .where(
            ScoreEvent.organization_id == _teams.c.organization_id,
            ScoreEvent.team_id == _teams.c.id,
        )
        .correlate(_teams)
    )
    found: dict[tuple[uuid.UUID, uuid.UUID], TeamState] = {}
    unique = sorted(set(keys))
    for start in range(0, len(unique), 500):
        rows = await session.execute(
            select(
                _teams.c.organization_id,
                _teams.c.id,
                _teams.c.status,
                _teams.c.version,
                _teams.c.score,
                _teams.c.score_reached_at,
                has_history.label("has_history"),
            ).where(tuple_(_teams.c.organization_id, _teams.c.id).in_(unique[start : start + 500]))
        )
        for row in rows:
            found[(row.organization_id, row.id)] = TeamState(
                status=str(row.status),
                version=int(row.version),
                score=int(row.score),
                reached_at=row.score_reached_at,
                has_history=bool(row.has_history),
            )
    return found


async def apply_steps(session: AsyncSession, *, steps: Sequence[Step]) -> list[int]:
    """Apply the steps in order: one UPDATE per team, one INSERT for the history.

    Returns the team's score after each step, in the order given. The caller has
    locked the teams (``lock_teams``).
    """
    if not steps:
        return []
    teams = await _team_states(session, [(s.organization_id, s.team_id) for s in steps])
    scores_after: list[int] = []
    rows = []
    for step in steps:
        team = teams[(step.organization_id, step.team_id)]
        score = team.step(step.delta, COMPLETIONS_STEP[step.kind], step.at)
        scores_after.append(score)
        rows.append(
            {
                "adjustment_id": step.adjustment_id,
                **history_row(
                    org_id=step.organization_id,
                    team_id=step.team_id,
                    task_id=step.task_id,
                    discipline_id=step.discipline_id,
                    kind=step.kind,
                    delta=step.delta,
                    score_after=score,
                    at=step.at,
                ),
            }
        )
    now = utcnow()
    for (org_id, team_id), team in teams.items():
        result = await session.execute(
            update(_teams)
            .where(_teams.c.organization_id == org_id, _teams.c.id == team_id)
            .values(
                score=team.score,
                tasks_completed=_teams.c.tasks_completed + team.completed,
                version=_teams.c.version + team.steps,
                score_reached_at=team.reached_at,
                updated_at=now,
            )
            .returning(
                _teams.c.score,
                _teams.c.tasks_completed,
                _teams.c.version,
                _teams.c.score_reached_at,
                _teams.c.updated_at,
            )
        )
        _refresh_loaded_team(session, (org_id, team_id), result.one()._asdict())
    await session.execute(insert(ScoreEvent), [{**row, "recorded_at": now} for row in rows])
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

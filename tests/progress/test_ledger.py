"""The ledger's rules (``questline.progress.ledger``) on their own, without a database:
what every backend's batch and the route's batch of one decide."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from questline.progress import schemas
from questline.progress.ledger import (
    Completing,
    Done,
    Plan,
    Recorded,
    TeamState,
    Withdrawing,
    Write,
)
from questline.web.errors import Conflict, Problem, Unprocessable

NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
ORG, TEAM, TASK, DISCIPLINE = (uuid.uuid4() for _ in range(4))


def _team(status: str = "Active", *, history: bool = True, reached: dt.datetime = NOW) -> TeamState:
    return TeamState(status=status, version=3, score=10, reached_at=reached, has_history=history)


def _complete(at: dt.datetime | None = None) -> Completing:
    return Completing(ORG, TEAM, schemas.ProgressCreate(TaskId=TASK, CompletedAt=at))


def _plan(
    writes: list[Write],
    team: TeamState | None,
    *,
    task: tuple[uuid.UUID, int] | None = (DISCIPLINE, 5),
    done: Done | None = None,
) -> tuple[Plan, list[object]]:
    plan = Plan(now=NOW)
    if team is not None:
        for position, write in enumerate(writes):
            plan.see(position, write, team=team, task=task, done=done)
    return plan, [plan.decide(position, write) for position, write in enumerate(writes)]


def _status(outcome: object) -> int:
    assert isinstance(outcome, Problem), outcome
    return outcome.status


def test_refusals_in_the_api_order() -> None:
    future = NOW + dt.timedelta(minutes=1)
    # No team: 404 before anything else, even an archived-looking or future write.
    _, [outcome] = _plan([_complete(future)], None)
    assert _status(outcome) == 404
    assert "team" in str(outcome)
    # Archived: 409 before an unknown task.
    _, [outcome] = _plan([_complete()], _team("Archived"), task=None)
    assert isinstance(outcome, Conflict)
    # An unknown (or invisible) task: 404 before a future CompletedAt.
    _, [outcome] = _plan([_complete(future)], _team(), task=None)
    assert _status(outcome) == 404
    assert "task" in str(outcome)
    _, [outcome] = _plan([_complete(future)], _team())
    assert isinstance(outcome, Unprocessable)
    # Nothing to withdraw.
    plan, [outcome] = _plan([Withdrawing(ORG, TEAM, TASK)], _team())
    assert _status(outcome) == 404
    assert "completion" in str(outcome)
    assert plan.written == []
    assert plan.changes().organizations == []


def test_a_repeat_changes_nothing_and_a_batch_sees_its_own_writes() -> None:
    first = Done(DISCIPLINE, 5, NOW - dt.timedelta(days=1))
    plan, [again] = _plan([_complete()], _team(), done=first)
    assert isinstance(again, Recorded)
    assert not again.created
    assert again.completion.completed_at == first.completed_at
    assert again.completion.score == 10
    assert plan.written == []

    # Completed, repeated, withdrawn and completed again in one batch: net one UPDATE.
    writes: list[Write] = [
        _complete(),
        _complete(),
        Withdrawing(ORG, TEAM, TASK),
        _complete(NOW - dt.timedelta(hours=1)),
    ]
    plan, outcomes = _plan(writes, _team(), done=first)
    scores = [
        o.completion.score if isinstance(o, Recorded) else getattr(o, "score", None)
        for o in outcomes
    ]
    assert scores == [10, 10, 5, 10]
    assert [o.created for o in outcomes if isinstance(o, Recorded)] == [False, False, True]
    changes = plan.changes()
    assert (len(changes.added), len(changes.replaced), len(changes.removed)) == (0, 1, 0)
    assert [row["delta"] for row in changes.history] == [-5, 5]
    assert [row["type"] for row in changes.events] == ["progress.withdrawn", "progress.completed"]
    [team] = changes.teams
    assert (team["score"], team["completed"], team["steps"], team["seen"]) == (10, 0, 2, 3)


@pytest.mark.parametrize(
    ("history", "reached_offset", "at_offset", "expected_offset"),
    [
        (True, 0, -60, 0),  # a backdated completion: the later time stays
        (True, -60, 0, 0),  # a later change moves it
        (False, 60, -60, -60),  # no history yet: the creation time gives way
    ],
)
def test_score_reached_at_is_the_latest_change_on_the_timeline(
    history: bool, reached_offset: int, at_offset: int, expected_offset: int
) -> None:
    team = _team(history=history, reached=NOW + dt.timedelta(seconds=reached_offset))
    assert team.step(5, 1, NOW + dt.timedelta(seconds=at_offset)) == 15
    assert team.reached_at == NOW + dt.timedelta(seconds=expected_offset)
    assert (team.has_history, team.completed, team.steps) == (True, 1, 1)

"""What a progress write costs the database: statements and round trips (issue 14: a
completion in at most three statements).

On PostgreSQL every statement is a round trip: a completion is a lookup (which takes
the discipline's and the team's locks) and one data-modifying statement; a withdrawal
is one statement and the event's insert. On SQLite the transaction holds the write
lock from ``BEGIN IMMEDIATE`` (sent in one hop, ``storage.db._begin``): the statements
after it run in the driver's thread in one round trip (``run_in_sqlite_thread``); both
report their statements to the engine's events without a cursor of the driver.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import event

from tests.factories import World
from tests.progress.factories import complete, make_discipline, score_of
from tests.support.harness import AppHarness, fast_lane_answers

pytestmark = pytest.mark.anyio


@dataclass
class Sent:
    round_trips: list[str] = field(default_factory=list)
    """Statements sent through the driver one by one (BEGIN on SQLite included)."""
    batched: list[str] = field(default_factory=list)
    """Statements run in one batch in the SQLite driver's thread."""

    @property
    def statements(self) -> int:
        return len(self.round_trips) + len(self.batched)


@contextmanager
def sent(app: FastAPI) -> Iterator[Sent]:
    """Statements through the engine, and those the group commit sends on the driver's
    connection (PostgreSQL: each a round trip)."""
    log = Sent()
    state = AppHarness(app)

    def before(_conn: Any, cursor: Any, statement: str, *_args: Any) -> None:
        (log.batched if cursor is None else log.round_trips).append(" ".join(statement.split()))

    def direct(statement: str) -> None:
        log.round_trips.append(" ".join(statement.split()))

    engine = state.db.engine.sync_engine
    listeners = state.progress_writes.listeners
    event.listen(engine, "before_cursor_execute", before)
    listeners.append(direct)
    try:
        yield log
    finally:
        event.remove(engine, "before_cursor_execute", before)
        listeners.remove(direct)


@pytest.mark.parametrize("fast_path", [False, True], ids=["route", "fast-path"])
async def test_a_completion_and_a_withdrawal_cost_few_statements(
    world: World, app_state: AppHarness, app: FastAPI, fast_path: bool
) -> None:
    """Through the route, and through the fast lane's group commit (a batch of one)."""
    app_state.configure(progress_fast_path_enabled=fast_path)
    answered = fast_lane_answers("POST", "DELETE")
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 25]]])
    task = tree.task(0, 0, 0)
    warm = await complete(org, team["Id"], tree.task(0, 0, 1))  # prepared statements warm
    assert warm.status_code == 201

    with sent(app) as first:
        done = await complete(org, team["Id"], task)
    assert done.status_code == 201, done.text
    with sent(app) as repeat:
        again = await complete(org, team["Id"], task)
    assert again.status_code == 200
    with sent(app) as withdrawal:
        gone = await org.client.delete(f"/team/{team['Id']}/progress/{task}", headers=org.admin)
    assert gone.status_code == 204
    assert await score_of(org, team["Id"]) == 25

    if app_state.db.is_sqlite:
        # BEGIN IMMEDIATE (one hop), then everything in one trip to the driver's thread;
        # nothing through the driver's cursors (three or four hops a statement).
        for log in (first, repeat, withdrawal):
            assert log.round_trips == [], log.round_trips
            assert log.batched[0] == "BEGIN IMMEDIATE", log.batched
        # The lookup, then the completion, score, history and version (no outbox event:
        # no consumer listens to this organization).
        writes = 4
        assert len(first.batched) == 1 + 1 + writes, first.batched
        assert len(repeat.batched) == 1 + 1, repeat.batched  # the lookup finds it done
        assert len(withdrawal.batched) == 1 + 1 + writes, withdrawal.batched
    elif fast_path:
        # Look everything up, write everything: two statements, each its own
        # transaction (no BEGIN, no COMMIT).
        assert first.statements == 2, first.round_trips
        assert first.round_trips[0].startswith("SELECT w.i")
        assert first.round_trips[1].startswith("WITH disciplines_held AS")
        assert repeat.statements == 1, repeat.round_trips  # nothing to write
        assert withdrawal.statements == 2, withdrawal.round_trips
    else:
        # The route's write is a batch of one in its transaction: the same two statements.
        assert first.statements == 2, first.round_trips
        assert first.round_trips[0].startswith("SELECT w.i")
        assert first.round_trips[1].startswith("WITH disciplines_held AS")
        assert repeat.statements == 1, repeat.round_trips
        assert withdrawal.statements == 2, withdrawal.round_trips
    assert not first.batched or app_state.db.is_sqlite
    assert fast_lane_answers("POST", "DELETE") - answered == (
        4 if fast_path else 0
    )  # with the warm-up


async def test_refusals_write_nothing(world: World, app_state: AppHarness, app: FastAPI) -> None:
    """Each refusal of an early write is answered by the fast lane from its one look-up:
    no write, and no second run of the request through the route."""
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    other = world.org()
    foreign = await make_discipline(world.db, org_id=other.id, shape=[[[7]]])
    version = await app_state.readmodel.version(org.id)
    answered = fast_lane_answers("POST", "DELETE")
    task = tree.task(0, 0, 0)
    withdraw = f"/team/{team['Id']}/progress/{task}"

    logs: list[Sent] = []
    refusals = [
        (lambda: complete(org, team["Id"], foreign.task(0, 0, 0)), 404),
        (lambda: complete(org, "00000000-0000-7000-8000-000000000000", task), 404),
        (lambda: complete(org, team["Id"], task, "2999-01-01T00:00:00Z"), 422),
        (lambda: org.client.delete(withdraw, headers=org.admin), 404),
    ]
    for send, status in refusals:
        with sent(app) as log:
            refused = await send()
        assert refused.status_code == status, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        logs.append(log)
    archived = await org.client.patch(
        f"/team/{team['Id']}", json={"Status": "Archived"}, headers=org.admin
    )
    assert archived.status_code == 200, archived.text
    with sent(app) as log:
        refused = await complete(org, team["Id"], task)
    assert refused.status_code == 409
    logs.append(log)

    assert fast_lane_answers("POST", "DELETE") - answered == len(logs)
    for log in logs:
        statements = log.round_trips + log.batched
        assert not [s for s in statements if s.split()[0] in ("INSERT", "UPDATE", "DELETE")]
        if app_state.db.is_sqlite:
            assert log.round_trips == [], log.round_trips
            assert log.batched[0] == "BEGIN IMMEDIATE"
            assert len(log.batched) <= 2, log.batched  # the look-up, once (none: no team)
        else:
            assert len(statements) == 1, statements
            assert statements[0].startswith("SELECT w.i")
    assert await score_of(org, team["Id"]) == 0
    # Only the archive changed the organization's version; no refusal bumped it.
    assert await app_state.readmodel.version(org.id) == (version or 0) + 1

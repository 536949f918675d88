"""Recording and withdrawing a completion in a session's transaction (the routes, the
demo loader): a batch of one of the progress ledger, on the session's backend
(``ledger_pg``, ``ledger_sqlite``), with the same rules as the group commit's batches
(``ledger``).

Both keep what the API promises: idempotent per team and task (only the request that
inserted the row changes the score), archived teams refuse (409), an unknown or
invisible task is 404, a future ``CompletedAt`` 422, and the score changes atomically
with its history, its outbox event and the organization's read-model version.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.events.fanout import EVERYONE, LISTENERS, Listeners
from questline.progress import ledger_pg, ledger_sqlite, schemas
from questline.progress.ledger import (
    Answered,
    Answering,
    Completing,
    Recorded,
    Withdrawing,
    Write,
    Written,
)
from questline.readmodel.versions import note_bump
from questline.web.metrics import TASKS_COMPLETED, TASKS_WITHDRAWN, count_on_commit


def _session_fetch(session: AsyncSession) -> ledger_pg.Fetch:
    """``ledger_pg``'s statements in the session's transaction, on its connection."""

    async def fetch(sql: str, *args: Any) -> Sequence[Any]:
        connection = await session.connection()
        result = await connection.exec_driver_sql(sql, args)
        return [row._mapping for row in result]

    return fetch


class Followers(Protocol):
    """Where what follows a commit goes: at once (the commit is done) or to the
    session's own commit (``in_session``)."""

    def versions(
        self, bumped: dict[uuid.UUID, int], moved: dict[uuid.UUID, frozenset[str]]
    ) -> None: ...
    def events(self) -> None: ...
    def count(self, counter: Counter, amount: int) -> None: ...


def follow_commit(done: Written, to: Followers) -> None:
    """What follows the commit of a batch of progress writes, wherever it was written
    (a route's session, the group commit): the organizations' new read-model versions,
    the outbox events for the dispatchers, the completions and withdrawals counted."""
    if done.versions:
        to.versions(dict(done.versions), done.moved)
    if done.events:
        to.events()
    if done.completed:
        to.count(TASKS_COMPLETED, done.completed)
    if done.withdrawn:
        to.count(TASKS_WITHDRAWN, done.withdrawn)


@dataclass(frozen=True, slots=True)
class _OnSessionCommit:
    session: AsyncSession

    def versions(
        self, bumped: dict[uuid.UUID, int], moved: dict[uuid.UUID, frozenset[str]]
    ) -> None:
        for org_id, version in bumped.items():
            note_bump(self.session, org_id, version, moved.get(org_id))

    def events(self) -> None:
        events.note_recorded(self.session)

    def count(self, counter: Counter, amount: int) -> None:
        count_on_commit(self.session, counter, amount)


async def write_in_session(session: AsyncSession, writes: Sequence[Write]) -> Written:
    """``writes`` in the session's transaction; what follows is handed to its commit.
    The outbox events are recorded for the organizations an outbox consumer listens to
    (the session's ``fanout.Listeners``, as ``events.record`` asks them)."""
    listeners: Listeners = session.info.get(LISTENERS, EVERYONE)
    if session.get_bind().dialect.name == "sqlite":
        done = await ledger_sqlite.write_batch(session, writes, listeners=listeners)
    else:
        done = await ledger_pg.write_batch(
            _session_fetch(session), writes, in_transaction=True, listeners=listeners
        )
    follow_commit(done, _OnSessionCommit(session))
    return done


async def complete(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    data: schemas.ProgressCreate,
    recorded_by: str | None = None,
) -> Recorded:
    """Record that the team completed the task; a repeat changes nothing (``created``
    False, the completion as first recorded, the current score)."""
    [outcome] = (
        await write_in_session(session, [Completing(org_id, team_id, data, recorded_by)])
    ).outcomes
    if isinstance(outcome, Exception):
        raise outcome
    assert isinstance(outcome, Recorded)
    return outcome


async def withdraw(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> schemas.Completion:
    """Take back a completion (minus its points, appended to the history); returns it
    with the team's new score. 404 for an unknown team or completion, 409 archived."""
    [outcome] = (await write_in_session(session, [Withdrawing(org_id, team_id, task_id)])).outcomes
    if isinstance(outcome, Exception):
        raise outcome
    assert isinstance(outcome, schemas.Completion)
    return outcome


async def answer(session: AsyncSession, answering: Answering) -> Answered:
    """Count the team's answer; a right one completes the task (``ledger.Plan._answer``
    has the rules). Raises its refusal."""
    [outcome] = (await write_in_session(session, [answering])).outcomes
    if isinstance(outcome, Exception):
        raise outcome
    assert isinstance(outcome, Answered)
    return outcome

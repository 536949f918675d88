"""The request timeout: a request stuck behind a database lock that another client holds
is answered 503 at the deadline, its transaction rolls back, and the service goes on."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import asyncpg
import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from questline.config import Settings
from questline.storage import tenancy
from questline.web.hardening import RequestTimeoutMiddleware, drain
from tests.factories import World
from tests.support.hang import HANG_GUARD
from tests.support.serving import serving
from tests.web.conftest import AppFactory, client_for

pytestmark = pytest.mark.anyio

TIMEOUT = 0.5


@asynccontextmanager
async def team_locked_elsewhere(
    settings: Settings, org_id: str, team_id: str
) -> AsyncIterator[None]:
    """Another client holds the lock a change of the team needs, until the block ends.

    PostgreSQL: a row lock on the team. SQLite: the database's write lock.
    """
    if settings.is_sqlite:
        # In a thread: the application's own background writers (a served app runs its
        # dispatchers) must be able to finish theirs while this one waits for the lock.
        connection = sqlite3.connect(
            settings.data_dir / "questline.db", isolation_level=None, check_same_thread=False
        )
        await asyncio.to_thread(connection.execute, "BEGIN IMMEDIATE")
        try:
            yield
        finally:
            connection.execute("ROLLBACK")
            connection.close()
        return
    url = settings.resolved_database_url.replace("postgresql+asyncpg://", "postgresql://")
    holder = await asyncpg.connect(url)
    try:
        transaction = holder.transaction()
        await transaction.start()
        # Row-level security (QUESTLINE_TEST_ROW_SECURITY): act for the team's organization.
        await holder.execute("SELECT set_config($1, $2, true)", tenancy.ORG_SETTING, org_id)
        locked = await holder.fetchval("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE", team_id)
        assert locked == 1
        try:
            yield
        finally:
            await transaction.rollback()
    finally:
        await holder.close()


async def test_a_request_stuck_on_a_lock_times_out_with_503_and_changes_nothing(
    world: World, make_app: AppFactory, settings: Settings
) -> None:
    """Served by uvicorn, as in production: the 503 reaches the client at the deadline,
    while the request is still cancelling (its write waits on the lock in SQLite's
    thread until the lock is gone)."""
    org = world.org()
    team = await org.create_team("Before")
    impatient = make_app(request_timeout_seconds=TIMEOUT)
    async with (
        serving(impatient, settings) as url,
        httpx.AsyncClient(base_url=url, timeout=HANG_GUARD) as client,
    ):
        async with team_locked_elsewhere(settings, str(org.id), team["Id"]):
            started = time.monotonic()
            # Without the timeout it would wait for ever: the lock is held until the
            # block ends, so an answer at all, inside it, is the timeout's. (A deadline
            # to fail on, not a timed assertion: a loaded machine is slow, not wrong.)
            with anyio.fail_after(TIMEOUT + 60):
                stuck = await client.patch(
                    f"/team/{team['Id']}", json={"Name": "After"}, headers=org.admin
                )
            waited = time.monotonic() - started
            reads_meanwhile = await client.get("/healthz")
        assert stuck.status_code == 503, stuck.text
        assert waited >= TIMEOUT  # not sooner than asked (load only makes it later)
        assert stuck.headers["content-type"] == "application/problem+json"
        assert stuck.headers["Retry-After"]
        assert stuck.json()["requestId"] == stuck.headers["X-Request-Id"]
        assert "took longer than 0.5 s" in stuck.json()["detail"]
        assert reads_meanwhile.status_code == 200
        # Once the lock is gone, the cancelled request finishes rolling back.
        assert await drain(impatient.state.questline.cancelled_requests, grace=10)

    # The lock is gone: the timed-out change was undone, and the database serves again.
    # (Read through the suite's ordinary app: on a loaded machine the impatient app's
    # 0.5 s would also cut short requests that are merely slow.)
    unchanged = await world.client.get(f"/team/{team['Id']}", headers=org.member)
    assert unchanged.status_code == 200
    assert unchanged.json()["Name"] == "Before"
    retried = await world.client.patch(
        f"/team/{team['Id']}", json={"Name": "After"}, headers=org.admin
    )
    assert retried.status_code == 200, retried.text
    assert [t["Name"] for t in await org.teams()] == ["After"]


async def test_a_fast_request_is_not_touched_by_the_timeout(
    world: World, make_app: AppFactory
) -> None:
    org = world.org()
    # The point is that a request under its limit completes through the timeout's own
    # path, whatever the limit is: far out, as a loaded machine took over 10 s for this
    # first write of a fresh application on PostgreSQL (CI, 2026-11-27).
    async with client_for(make_app(request_timeout_seconds=HANG_GUARD)) as client:
        created = await client.post("/team", json={"name": "Quick"}, headers=org.admin)
    assert created.status_code == 201
    assert [t["Name"] for t in await org.teams()] == ["Quick"]


class _Stream:
    """An ASGI app that starts its answer and sends ``chunks`` body parts ``gap`` seconds
    apart, then (``stall``) waits for ever before its last part."""

    def __init__(self, chunks: int, gap: float, *, stall: bool = False) -> None:
        self.chunks, self.gap, self.stall = chunks, gap, stall
        self.cancelled = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            for _ in range(self.chunks):
                await send({"type": "http.response.body", "body": b"x", "more_body": True})
                await anyio.sleep(self.gap)
            if self.stall:
                await anyio.sleep_forever()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except BaseException:
            self.cancelled = True
            raise


async def _run_bounded(app: _Stream, seconds: float) -> tuple[list[Message], set[Any]]:
    sent: list[Message] = []
    cancelled: set[Any] = set()

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    bounded = RequestTimeoutMiddleware(
        app, seconds=seconds, bulk_seconds=seconds, cancelled=cancelled
    )
    scope: Scope = {"type": "http", "path": "/team", "method": "GET", "headers": []}
    with anyio.fail_after(HANG_GUARD):
        await bounded(scope, receive, send)
    return sent, cancelled


async def test_a_streamed_answer_that_keeps_sending_outlives_the_timeout() -> None:
    # 30 chunks 0.1 s apart: 3 s in all, past the 2.5 s timeout; only a pause of 2.4 s
    # more than asked for (a loop stalled that long) would cut it.
    app = _Stream(chunks=30, gap=0.1)
    sent, cancelled = await _run_bounded(app, seconds=2.5)
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert len(bodies) == 31
    assert bodies[-1]["more_body"] is False  # the whole answer went out
    assert not app.cancelled
    assert not cancelled


async def test_a_streamed_answer_that_stalls_is_cut_off_and_cancelled() -> None:
    app = _Stream(chunks=3, gap=0.0, stall=True)
    sent, cancelled = await _run_bounded(app, seconds=TIMEOUT)
    # The status was sent: no 503 can follow it; the body just ends short.
    assert [m["type"] for m in sent] == ["http.response.start"] + ["http.response.body"] * 3
    assert all(m["more_body"] for m in sent[1:])
    assert await drain(cancelled, grace=HANG_GUARD)
    assert app.cancelled


async def test_the_timeout_swallows_only_its_own_cancellation() -> None:
    """The request runs in the caller's task: after its own timeout the task is left as it
    was (no cancellation pending), and a cancellation from outside (a server shutting
    down) still ends the request."""
    stalled = _Stream(chunks=1, gap=0.0, stall=True)
    await _run_bounded(stalled, seconds=TIMEOUT)
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0

    running = asyncio.ensure_future(_run_bounded(_Stream(chunks=1, gap=0.0, stall=True), 60))
    for _ in range(5):
        await asyncio.sleep(0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running

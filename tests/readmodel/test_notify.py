"""PostgreSQL: commits are announced after the commit, never inside the write transaction.

``NOTIFY`` takes a database-wide lock held through the notifying transaction's commit;
inside every write it serialized all writes of the database. The writer's process now
announces its committed versions on its own connection (``questline.storage.notify``),
coalesced, and a process that dies before announcing is covered by the listeners'
periodic re-read (``questline.readmodel.sources.RECHECK_AFTER``).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg
import pytest
from fastapi import FastAPI
from sqlalchemy import event, text

from questline.config import Settings
from questline.readmodel import moved, sources
from questline.readmodel.sources import PostgresSource
from questline.readmodel.versions import CHANNEL, bump, bump_all
from questline.storage.notify import ALL, Notifier, asyncpg_dsn, parsed
from tests.factories import World
from tests.progress.factories import complete, make_discipline
from tests.support.harness import AppHarness
from tests.support.live import inherited_env

pytestmark = [pytest.mark.anyio, pytest.mark.postgres_only]

DEADLINE = 30.0
"""Seconds a poll waits before the test fails (generous: the machine is shared)."""


class Heard:
    """Notifications received on a LISTEN connection of the test's own."""

    def __init__(self) -> None:
        self.payloads: list[str] = []
        self.arrived = asyncio.Event()

    def __call__(self, _connection: Any, _pid: int, _channel: str, payload: object) -> None:
        self.payloads.append(str(payload))
        self.arrived.set()

    async def until_parsed(self, organization_id: uuid.UUID, version: int) -> dict[int, Any]:
        """What the announcement of ``version`` said its versions moved."""
        async with asyncio.timeout(DEADLINE):
            while True:
                for text in self.payloads:
                    if text != ALL and parsed(text)[:2] == (organization_id, version):
                        return parsed(text)[2]
                self.arrived.clear()
                await self.arrived.wait()

    async def until(self, payload: str) -> None:
        async with asyncio.timeout(DEADLINE):
            while payload not in self.payloads:
                self.arrived.clear()
                await self.arrived.wait()


@pytest.fixture
async def heard(settings: Settings) -> AsyncIterator[tuple[Heard, Any]]:
    connection = await asyncpg.connect(asyncpg_dsn(settings.resolved_listen_url))
    listener = Heard()
    await connection.add_listener(CHANNEL, listener)
    try:
        yield listener, connection
    finally:
        await connection.close()


@contextmanager
def statements(
    state: AppHarness, direct: list[Callable[[str], None]] | None = None
) -> Iterator[list[str]]:
    """Statements through the engine, and through ``direct`` listeners (the progress
    group commit's, which runs on the driver's connection)."""
    seen: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    engine = state.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", before)
    if direct is not None:
        direct.append(seen.append)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", before)
        if direct is not None:
            direct.remove(seen.append)


async def test_a_progress_write_sends_no_notify_in_its_transaction(
    world: World, app_state: AppHarness, app: FastAPI, heard: tuple[Heard, Any]
) -> None:
    listener, _ = heard
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 25]]])
    with statements(app_state, app_state.progress_writes.listeners) as sent:
        done = await complete(org, team["Id"], tree.task(0, 0, 0))
        assert done.status_code == 201, done.text
        gone = await org.client.delete(
            f"/team/{team['Id']}/progress/{tree.task(0, 0, 0)}", headers=org.admin
        )
        assert gone.status_code == 204
    assert sent, "the writes ran statements"
    assert not [s for s in sent if "notify" in s.lower()], sent
    # …and yet both commits are announced, by the notifier, after them, with what the
    # withdrawal moved: its team, the scores, and its step down the order.
    version = await app_state.readmodel.version(org.id)
    assert version is not None
    said = await listener.until_parsed(org.id, version)
    assert {moved.SCORES, moved.team(uuid.UUID(team["Id"]))} < said[version]
    (step,) = (scope for scope in said[version] if scope.startswith(moved.STEP))
    assert moved.crossed(step, moved.placed((-5, 0.0)))  # from 10 points back past 5


async def test_bump_and_bump_all_announce_only_after_the_commit(
    world: World, app_state: AppHarness, heard: tuple[Heard, Any]
) -> None:
    listener, _ = heard
    org = world.org()
    await org.create_team()
    notifier = app_state.db.notifier
    assert notifier is not None
    with statements(app_state) as sent:
        async with app_state.db.session() as session:
            bumped = await bump(session, org.id)
            await bump_all(session)
            # Not queued before the commit (a rolled-back write announces nothing).
            assert notifier.pending == 0
    assert not [s for s in sent if "notify" in s.lower()], sent
    await listener.until(ALL)
    await listener.until(f"{org.id}:{bumped}")


async def test_coalescing_sends_the_highest_version_in_one_statement(
    settings: Settings, heard: tuple[Heard, Any]
) -> None:
    listener, _ = heard
    notifier = Notifier(settings.resolved_listen_url)
    sends: list[list[str]] = []  # the payloads of each statement the notifier sends
    connect = notifier._connect

    class Counted:
        def __init__(self, connection: Any) -> None:
            self.connection = connection

        async def fetchval(self, query: str, channel: str, payloads: list[str], **kw: Any) -> Any:
            sends.append(list(payloads))
            return await self.connection.fetchval(query, channel, payloads, **kw)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.connection, name)

    async def counted() -> Any:
        return Counted(await connect())

    notifier._connect = counted  # type: ignore[method-assign]
    first, second = uuid.uuid4(), uuid.uuid4()
    try:
        # Queued without yielding to the loop: one send carries them all.
        notifier.queue({first: 3})
        notifier.queue({first: 5, second: 1})
        notifier.queue({first: 4})
        notifier.queue({None: 0})
        assert await notifier.flush(DEADLINE)
        assert len(sends) == 1
        assert len(sends[0]) == 3
        await listener.until(f"{second}:1")
        await listener.until(ALL)
        await listener.until(f"{first}:5")
        assert [p for p in listener.payloads if p.startswith(str(first))] == [f"{first}:5"]
    finally:
        await notifier.close()


async def test_a_failed_send_is_retried_on_a_new_connection(
    settings: Settings, app_state: AppHarness, heard: tuple[Heard, Any]
) -> None:
    listener, _ = heard
    notifier = Notifier(settings.resolved_listen_url)
    org = uuid.uuid4()
    try:
        notifier.queue({org: 1})
        assert await notifier.flush(DEADLINE)
        await listener.until(f"{org}:1")
        pid = notifier.server_pid
        assert pid is not None
        async with app_state.db.engine.connect() as connection:
            killed = await connection.scalar(
                text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}
            )
            await connection.commit()
        assert killed
        notifier.queue({org: 2})
        assert await notifier.flush(DEADLINE)
        await listener.until(f"{org}:2")
        assert notifier.server_pid not in (None, pid)
    finally:
        await notifier.close()


async def test_a_writer_that_dies_before_announcing_is_seen_through_the_re_read(
    world: World, app_state: AppHarness, settings: Settings, heard: tuple[Heard, Any]
) -> None:
    listener, connection = heard
    org = world.org()
    await org.create_team()
    source = app_state.readmodel.source
    assert isinstance(source, PostgresSource)
    seen = await app_state.readmodel.version(org.id)
    assert seen is not None
    assert source.healthy
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tests.readmodel.writer", str(org.id), "--die-after-commit"],
        env=inherited_env(settings),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    bumped = int(result.stdout.strip())
    assert bumped == seen + 1
    # Committed, and never announced.
    async with app_state.db.session(write=False) as session:
        committed = await session.scalar(
            text("SELECT version FROM readmodel_versions WHERE organization_id = :o"),
            {"o": org.id},
        )
    assert committed == bumped
    await connection.fetchval("SELECT 1")
    assert f"{org.id}:{bumped}" not in listener.payloads
    # This process still learns it: its periodic re-read of what it serves from memory.
    rechecks = source.rechecks
    for _ in range(int(DEADLINE / 0.05)):
        if await app_state.readmodel.version(org.id) == bumped:
            break
        await asyncio.sleep(0.05)
    assert await app_state.readmodel.version(org.id) == bumped
    assert source.rechecks > rechecks


async def test_a_stopped_source_reads_through_the_pool_without_waiting_to_listen(
    world: World, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the application's shutdown stopped it (a request still in flight, or an ASGI
    host that starts the lifespan again), the source neither listens again nor waits for
    a listening connection it will never have: each read goes to the pool."""
    org = world.org()
    await org.create_team()
    source = app_state.readmodel.source
    assert isinstance(source, PostgresSource)
    await source.stop()
    # Waiting for a first connection would now last the hour (the guard below fails first).
    monkeypatch.setattr(sources, "FIRST_CONNECT_WAIT", 3600.0)
    async with app_state.db.session(write=False) as session:
        committed = await session.scalar(
            text("SELECT version FROM readmodel_versions WHERE organization_id = :o"),
            {"o": org.id},
        )
    async with asyncio.timeout(DEADLINE):
        assert await source.current(org.id) == committed
    assert not source.healthy
    assert source.server_pid is None

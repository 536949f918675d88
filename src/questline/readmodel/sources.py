"""Where a process learns an organization's committed version.

PostgreSQL — ``PostgresSource``: one dedicated connection per process (a direct one,
``QUESTLINE_DATABASE_LISTEN_URL``) that ``LISTEN``s on ``questline_changes``. The
writer's process announces each commit right after it (``questline.storage.notify``:
one ``pg_notify`` per organization, coalesced, on its own connection — not inside the
write transaction, where NOTIFY's commit lock would serialize every write). Reading a
version is then a dictionary look-up, with three rules that bound how stale it can be:

* **confirmation** — the source notes when the last round trip on the listening
  connection *started*. PostgreSQL delivers a notification before the answer to any
  query sent after the notifying commit, so every announcement sent before that moment
  is known. A read serves from memory only while that moment is less than
  ``STALE_AFTER`` (90 ms) old; past ``REFRESH_AFTER`` (40 ms) a round trip is started
  in the background, so under steady traffic no request waits for one, and an
  overloaded process (whose notifications could sit unread in its socket) waits for one
  instead of serving stale. Normal path: a commit is seen by every process within the
  writer's send (a round trip after the commit, or after the previous send) plus 90 ms.
* **re-read** — a process can die between its commit and the announcement. So a
  confirmation round trip whose predecessor re-read is ``RECHECK_AFTER`` (1 s) old or
  more re-reads, in one statement, the versions of the organizations this process
  served from memory since the previous re-read (the others are no longer served from
  memory: their next read asks the database). A commit whose announcement never came
  is therefore seen within ``RECHECK_AFTER + STALE_AFTER`` (1.09 s).
* **health** — while the connection is down (and until it is back and has re-read
  what it tracks), every read asks the database for the version through the pool.
  Nothing is trusted across a reconnect.

SQLite — ``SqliteSource``: a private ``sqlite3`` connection to the same file asks
``PRAGMA data_version`` on every read (about a microsecond: it changes when any other
connection — any process — committed), and re-reads the organization's version row
only when it changed. Another process's commit is therefore seen by the next read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import asyncpg
from sqlalchemy import make_url, select

from questline.readmodel.changes import Changes
from questline.readmodel.models import ReadModelVersion
from questline.readmodel.versions import ALL, CHANNEL
from questline.storage.db import Database
from questline.storage.notify import parsed

log = logging.getLogger(__name__)

STALE_AFTER = 0.09
REFRESH_AFTER = 0.04
RECHECK_AFTER = 1.0
RECHECK = (
    "SELECT organization_id, version FROM readmodel_versions "
    "WHERE organization_id = ANY($1::uuid[])"
)
ROUND_TRIP_TIMEOUT = 2.0
FIRST_CONNECT_WAIT = 2.0


class VersionSource(Protocol):
    async def current(self, organization_id: uuid.UUID) -> int | None: ...

    def forget_all(self) -> None: ...

    async def stop(self) -> None: ...


async def read_through_pool(db: Database, organization_id: uuid.UUID) -> int:
    async with db.engine.connect() as connection:
        found = await connection.scalar(
            select(ReadModelVersion.version).where(
                ReadModelVersion.organization_id == organization_id
            )
        )
    return int(found or 0)


def settle(
    changes: Changes,
    organization_id: uuid.UUID,
    found: int,
    on_everything_changed: Callable[[], None],
) -> int:
    """Record a version read from the database. Versions only grow, except when the
    database itself was put back (a restore from a backup): then nothing this process
    knows is true any more, and everything is forgotten."""
    known = changes.known(organization_id)
    if known is not None and found < known:
        log.warning("read model: the database went back in time (restored?); forgetting all")
        on_everything_changed()
        changes.advance(organization_id, found)
        return found
    return changes.advance(organization_id, found)


class SqliteSource:
    def __init__(
        self, path: str, changes: Changes, on_everything_changed: Callable[[], None]
    ) -> None:
        self.path = path
        self.changes = changes
        self.on_everything_changed = on_everything_changed
        self._connection: sqlite3.Connection | None = None
        self._data_version: int | None = None
        self._checked: dict[uuid.UUID, int] = {}

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            f"file:{self.path}?mode=ro",
            uri=True,
            timeout=0.2,
            isolation_level=None,
            check_same_thread=False,
        )
        self._connection = connection
        self._data_version = None
        return connection

    async def current(self, organization_id: uuid.UUID) -> int | None:
        try:
            connection = self._connection or self._open()
            data_version = connection.execute("PRAGMA data_version").fetchone()[0]
            if data_version != self._data_version:
                self._data_version = data_version
                self._checked.clear()
            version = self._checked.get(organization_id)
            if version is None:
                row = connection.execute(
                    "SELECT version FROM readmodel_versions WHERE organization_id = ?",
                    (organization_id.hex,),
                ).fetchone()
                version = int(row[0]) if row else 0
                version = settle(self.changes, organization_id, version, self.on_everything_changed)
                self._checked[organization_id] = version
        except sqlite3.Error:
            log.warning("read model: SQLite version check failed; reading uncached", exc_info=True)
            await self.stop()
            return None
        return self.changes.advance(organization_id, version)

    def forget_all(self) -> None:
        self._checked.clear()

    async def stop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._checked.clear()


def asyncpg_dsn(url: str) -> str:
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresSource:
    def __init__(
        self,
        db: Database,
        listen_url: str,
        changes: Changes,
        on_everything_changed: Callable[[], None],
        on_moved: Callable[[uuid.UUID, int, frozenset[str]], None] | None = None,
    ) -> None:
        self.db = db
        self.dsn = asyncpg_dsn(listen_url)
        self.on_moved = on_moved
        """Told what a version moved when its notification says it (before the version
        is advanced: a request that sees the version finds its moves)."""
        self.changes = changes
        self.on_everything_changed = on_everything_changed
        self.healthy = False
        self.reconnects = 0
        self._connection: Any = None
        self._lock = asyncio.Lock()
        self._tracked: set[uuid.UUID] = set()
        self._used: set[uuid.UUID] = set()
        """Tracked organizations read since the last re-read: the next one re-reads only
        these and stops tracking the rest (their next read asks the database), so a
        re-read costs in proportion to what is being read, not to all ever read."""
        self._confirmed_at = 0.0
        self._rechecked_at = 0.0
        self.rechecks = 0
        self._epoch = 0
        self._task: asyncio.Task[None] | None = None
        self._refresh: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stopping = False

    # -- the listening connection -------------------------------------------------
    def _start(self) -> None:
        if self._task is None and not self._stopping:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        delay = 0.05
        loop = asyncio.get_running_loop()
        while not self._stopping:
            lost = asyncio.Event()
            try:
                connection = await asyncpg.connect(self.dsn, timeout=5)
            except (OSError, asyncpg.PostgresError, TimeoutError):
                log.warning("read model: cannot connect to LISTEN; retrying", exc_info=True)
                self._ready.set()  # readers fall back to the pool meanwhile
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            connection.add_termination_listener(lambda _c, lost=lost: lost.set())
            try:
                started = loop.time()
                await connection.add_listener(CHANNEL, self._on_notify)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                await _close(connection)
                continue
            self._connection = connection
            self._epoch += 1
            self._tracked.clear()
            self._confirmed_at = started
            self._rechecked_at = started
            self.healthy = True
            self.reconnects += 1
            delay = 0.05
            self._ready.set()
            await lost.wait()
            self.healthy = False
            self._connection = None
            self._tracked.clear()
            await _close(connection)

    def _on_notify(self, _connection: Any, _pid: int, _channel: str, payload: object) -> None:
        payload = str(payload)
        if payload == ALL:
            self.on_everything_changed()
            return
        try:
            organization_id, version, said = parsed(payload)
        except ValueError:
            log.warning("read model: ignored notification %r", payload)
            return
        if self.on_moved is not None:
            for number, scopes in said.items():
                self.on_moved(organization_id, number, scopes)
        self.changes.advance(organization_id, version)

    def _lose(self) -> None:
        """The connection stopped answering: drop it (the run loop reconnects)."""
        self.healthy = False
        self._tracked.clear()
        connection = self._connection
        if connection is not None:
            connection.terminate()

    async def _round_trip(self, query: str, *args: object, rows: bool = False) -> Any:
        loop = asyncio.get_running_loop()
        async with self._lock:
            connection = self._connection
            if connection is None or not self.healthy:
                raise ConnectionError("not listening")
            started = loop.time()
            fetch = connection.fetch if rows else connection.fetchval
            try:
                result = await fetch(query, *args, timeout=ROUND_TRIP_TIMEOUT)
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                self._lose()
                raise ConnectionError("lost the listening connection") from exc
            self._confirmed_at = max(self._confirmed_at, started)
            return result

    async def _confirm(self) -> None:
        with contextlib.suppress(ConnectionError):
            started = asyncio.get_running_loop().time()
            if self._tracked and started - self._rechecked_at >= RECHECK_AFTER:
                await self._recheck(started)
            else:
                await self._round_trip("SELECT 1")

    async def _recheck(self, started: float) -> None:
        """Re-read every version served from memory (a writer that died before it
        announced its commit is noticed here). Only ever advances: a version this
        process committed after the statement's snapshot must not look like a restore."""
        epoch = self._epoch
        used, self._used = self._used, set()
        self._tracked &= used
        tracked = list(self._tracked)
        if not tracked:
            await self._round_trip("SELECT 1")
            self._rechecked_at = max(self._rechecked_at, started)
            return
        found = await self._round_trip(RECHECK, tracked, rows=True)
        self._rechecked_at = max(self._rechecked_at, started)
        self.rechecks += 1
        if epoch != self._epoch:
            return
        for organization_id, version in found:
            self.changes.advance(organization_id, int(version))

    def _refresh_in_background(self) -> None:
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.get_running_loop().create_task(self._confirm())

    # -- reading a version --------------------------------------------------------
    async def current(self, organization_id: uuid.UUID) -> int | None:
        # A stopped source starts nothing and waits for nothing: its reads go through the
        # pool (a request still answered while the application shuts down).
        if self._task is None and not self._stopping:
            self._start()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FIRST_CONNECT_WAIT):
                    await self._ready.wait()
        if self.healthy:
            age = asyncio.get_running_loop().time() - self._confirmed_at
            if age > STALE_AFTER:
                if self._refresh is not None and not self._refresh.done():
                    await asyncio.shield(self._refresh)
                else:
                    await self._confirm()
            elif age > REFRESH_AFTER:
                self._refresh_in_background()
        if self.healthy and organization_id in self._tracked:
            self._used.add(organization_id)
            known = self.changes.known(organization_id)
            if known is not None:
                return known
        if self.healthy:
            epoch = self._epoch
            try:
                found = await self._round_trip(
                    "SELECT version FROM readmodel_versions WHERE organization_id = $1",
                    organization_id,
                )
            except ConnectionError:
                pass
            else:
                if self.healthy and epoch == self._epoch:
                    self._tracked.add(organization_id)
                    self._used.add(organization_id)
                return settle(
                    self.changes, organization_id, int(found or 0), self.on_everything_changed
                )
        found = await read_through_pool(self.db, organization_id)
        return settle(self.changes, organization_id, found, self.on_everything_changed)

    @property
    def server_pid(self) -> int | None:
        """The listening backend's process id (tests terminate it)."""
        connection = self._connection
        return None if connection is None else int(connection.get_server_pid())

    def forget_all(self) -> None:
        self._tracked.clear()

    async def stop(self) -> None:
        self._stopping = True
        for task in (self._task, self._refresh):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        connection, self._connection = self._connection, None
        self.healthy = False
        if connection is not None:
            await _close(connection)


async def _close(connection: Any) -> None:
    try:
        async with asyncio.timeout(2):
            await connection.close()
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
        connection.terminate()

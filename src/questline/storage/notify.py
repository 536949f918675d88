"""Announcing committed read-model versions to every process, *after* the commit.

A write transaction bumps its organization's version row but sends no ``NOTIFY``:
PostgreSQL's ``PreCommit_Notify`` takes one database-wide lock that a notifying
transaction holds through its commit (WAL flush included), so every notifying commit
in the database would wait for the previous one (docs/performance.md, "NOTIFY out of
the write transaction").

Instead ``Database`` hands each commit's bumped versions to this process's
``Notifier`` (``queue``), which sends them on a connection of its own:

* **coalescing** — pending versions are kept as one per organization (the highest);
  a send takes everything pending and issues one ``pg_notify`` per organization in ONE
  statement (``unnest`` of the payloads), so under load sends batch by themselves;
* **little delay** — a send starts as soon as something is pending, at least
  ``SEND_INTERVAL`` after the previous one: on a quiet service a change goes out a
  round trip after its commit, under load one send every few milliseconds carries all
  the versions bumped meanwhile (each send is a transaction that takes the notify lock);
* **no WAL wait under the lock** — the connection runs with
  ``synchronous_commit = off``: the notifying transaction writes nothing but the
  notification, so its commit need not wait for a flush while it holds the lock (a lost
  notification is covered by the readers' re-read, ``readmodel.sources``);
* **never lost while the process lives** — a failed send puts its versions back
  (merged with what arrived meanwhile) and reconnects with a growing pause.

The connection is the direct one (``QUESTLINE_DATABASE_LISTEN_URL``, else the main
URL): never through a transaction pooler. A process that dies between its commit and
the send leaves the others uninformed; they notice anyway within
``readmodel.sources.RECHECK_AFTER`` (every listening process re-reads the versions it
serves from memory at that interval).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from typing import Any

import asyncpg
from sqlalchemy import make_url

CHANNEL = "questline_changes"
ALL = "*"
"""The notification payload of a change seen by every organization (a global discipline)."""

MAX_PAYLOAD = 7_900
"""Characters a payload may take (PostgreSQL's limit is 8,000 bytes): past it, what the
versions moved is left out, and the receivers take them as "anything moved"."""

Said = dict[int, frozenset[str]]
"""By version: what a commit of this process said it moved."""


def payload(organization_id: uuid.UUID, version: int, said: Said) -> str:
    """``<org>:<version>``, then ``;<v>=<scope>,<scope>`` for each version whose moves
    its commit said (``questline.readmodel.moved``; scopes never hold ``;`` ``,`` ``=``)."""
    head = f"{organization_id}:{version}"
    tail = "".join(f";{v}={','.join(sorted(scopes))}" for v, scopes in sorted(said.items()))
    return head + tail if len(head) + len(tail) <= MAX_PAYLOAD else head


def parsed(text: str) -> tuple[uuid.UUID, int, Said]:
    """A ``payload``'s organization, version and what its versions moved (ValueError if
    it is none)."""
    head, *said = text.split(";")
    organization, _, version = head.partition(":")
    moves: Said = {}
    for part in said:
        number, _, scopes = part.partition("=")
        moves[int(number)] = frozenset(scope for scope in scopes.split(",") if scope)
    return uuid.UUID(organization), int(version), moves


SEND = "SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) AS p"
SEND_INTERVAL = 0.005
"""Seconds between the start of two sends at least: a quiet service's change goes out
at once, a busy one's in one send every few milliseconds (each ``NOTIFY`` is a
transaction, and takes the database-wide notify lock)."""
CLOSE_WAIT = 2.0
"""Seconds ``close`` waits for what is pending to go out."""

log = logging.getLogger(__name__)


def asyncpg_dsn(url: str) -> str:
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


class Notifier:
    """One per process and database: sends committed versions, coalesced."""

    def __init__(self, url: str) -> None:
        self.dsn = asyncpg_dsn(url)
        self._pending: dict[uuid.UUID, int] = {}
        self._said: dict[uuid.UUID, Said] = {}
        self._everything = False
        self._wake: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connection: Any = None

    def queue(
        self, notes: dict[Any, int], moved: Mapping[Any, frozenset[str] | None] | None = None
    ) -> None:
        """Announce a commit's bumped versions (``None`` key: every organization), with
        what each moved where the commit said it."""
        for organization_id, version in notes.items():
            if organization_id is None:
                self._everything = True
                continue
            if self._pending.get(organization_id, -1) < version:
                self._pending[organization_id] = version
            scopes = (moved or {}).get(organization_id)
            if scopes is not None:
                self._said.setdefault(organization_id, {})[version] = scopes
        self._kick()

    @property
    def server_pid(self) -> int | None:
        """The sending backend's process id (tests terminate it)."""
        connection = self._connection
        return None if connection is None else int(connection.get_server_pid())

    @property
    def pending(self) -> int:
        return len(self._pending) + int(self._everything)

    def _kick(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - commits always run on a loop
            return
        if self._loop is not loop or self._task is None or self._task.done():
            # A new event loop (tests run one per test): start over on it; a connection
            # of another loop cannot be used from this one.
            if self._connection is not None and self._loop is not loop:
                with contextlib.suppress(Exception):  # its loop may be closed already
                    self._connection.terminate()
                self._connection = None
            self._loop = loop
            self._wake = asyncio.Event()
            self._idle = asyncio.Event()
            self._task = loop.create_task(self._run())
        assert self._wake is not None
        assert self._idle is not None
        self._idle.clear()
        self._wake.set()

    def _take(self) -> list[str]:
        payloads = [
            payload(org, version, self._said.get(org, {})) for org, version in self._pending.items()
        ]
        if self._everything:
            payloads.append(ALL)
        self._pending = {}
        self._said = {}
        self._everything = False
        return payloads

    def _put_back(self, payloads: list[str]) -> None:
        for sent in payloads:
            if sent == ALL:
                self._everything = True
                continue
            organization_id, number, said = parsed(sent)
            if self._pending.get(organization_id, -1) < number:
                self._pending[organization_id] = number
            self._said.setdefault(organization_id, {}).update(said)

    async def _connect(self) -> Any:
        connection = await asyncpg.connect(
            self.dsn,
            timeout=5,
            statement_cache_size=0,
            server_settings={"synchronous_commit": "off", "application_name": "questline-notify"},
        )
        return connection

    async def _run(self) -> None:
        wake, idle = self._wake, self._idle
        assert wake is not None
        assert idle is not None
        pause = 0.05
        while True:
            if not self.pending:
                idle.set()
                wake.clear()
                await wake.wait()
                continue
            payloads = self._take()
            try:
                if self._connection is None or self._connection.is_closed():
                    self._connection = await self._connect()
                await self._connection.fetchval(SEND, CHANNEL, payloads, timeout=5)
            except Exception:  # any failure: keep the versions, start on a new connection
                log.warning("read model: sending notifications failed; retrying", exc_info=True)
                self._put_back(payloads)
                connection, self._connection = self._connection, None
                if connection is not None:
                    connection.terminate()
                await asyncio.sleep(pause)
                pause = min(pause * 2, 2.0)
                continue
            except BaseException:
                self._put_back(payloads)
                raise
            pause = 0.05
            # Under load, the next send carries everything bumped meanwhile.
            await asyncio.sleep(SEND_INTERVAL)

    async def flush(self, timeout: float = CLOSE_WAIT) -> bool:  # noqa: ASYNC109
        """Wait until nothing is pending (at most ``timeout`` s); True if it went out."""
        idle = self._idle
        if idle is None or self._task is None or self._loop is not asyncio.get_running_loop():
            return not self.pending
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await idle.wait()
        return not self.pending

    async def close(self) -> None:
        """Send what is pending (a short wait), then stop (a later ``queue`` starts again)."""
        with contextlib.suppress(Exception):
            await self.flush()
        task, self._task = self._task, None
        same_loop = self._loop is asyncio.get_running_loop()
        if task is not None and same_loop and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if not same_loop:
            with contextlib.suppress(Exception):  # its loop may be closed already
                connection.terminate()
            return
        try:
            async with asyncio.timeout(2):
                await connection.close()
        except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError):
            connection.terminate()

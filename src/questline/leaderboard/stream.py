"""``GET /leaderboard/stream``: the leaderboard as Server-Sent Events.

The first event (``event: leaderboard``) carries exactly what ``GET /leaderboard``
answers for the same ``discipline`` and ``limit``; then one event after each change
that alters it. ``id:`` is the organization's read-model version: a client that
reconnects with ``Last-Event-ID`` gets the current leaderboard at once only when it
changed since. Changes are coalesced (at most one event per
``stream_min_interval_seconds``, 250 ms); a comment line (``: heartbeat``) goes out
when nothing else did for ``stream_heartbeat_seconds`` (15 s), keeping proxies from
closing an idle connection. A stream ends after ``stream_max_seconds`` (an hour): the
client reconnects with ``Last-Event-ID`` (browsers' ``EventSource`` does by itself).

A stream waits on ``ReadModel.changes.wait`` — the version every write bumps
in its own transaction. A commit in this process wakes it at once; on PostgreSQL a
commit in any other process reaches it through ``LISTEN questline_changes``; on SQLite
through ``PRAGMA data_version``, checked every 50 ms while waiting. Streams are capped
per organization and per process (503 with ``Retry-After`` beyond).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from questline.config import Settings
from questline.leaderboard import caller_view, selection
from questline.readmodel.cache import Entry
from questline.readmodel.http import dumps
from questline.readmodel.service import ReadModel
from questline.storage import tenancy
from questline.storage.db import Database
from questline.web.errors import ServiceUnavailable
from questline.web.identity import Role
from questline.web.state import made_once

MEDIA_TYPE = "text/event-stream"


@dataclass
class Registry:
    """Open streams of this process, per organization."""

    per_org: Counter[uuid.UUID] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.per_org.values())

    def acquire(self, org_id: uuid.UUID, settings: Settings) -> None:
        if self.total >= settings.stream_max_per_process:
            raise ServiceUnavailable(
                "This server holds as many leaderboard streams as it may; retry shortly "
                "(another server may take it).",
                headers={"Retry-After": "5"},
            )
        if self.per_org[org_id] >= settings.stream_max_per_organization:
            raise ServiceUnavailable(
                f"Your organization has {self.per_org[org_id]} open leaderboard streams on "
                "this server, the most it may; close one or retry later.",
                headers={"Retry-After": "30"},
            )
        self.per_org[org_id] += 1

    def release(self, org_id: uuid.UUID) -> None:
        self.per_org[org_id] -= 1
        if self.per_org[org_id] <= 0:
            del self.per_org[org_id]


def registry_of(app: Any) -> Registry:
    """The process's registry (one per application)."""
    return made_once(app.state, "questline_streams", Registry, Registry)


@dataclass(frozen=True, slots=True)
class Query:
    org_id: uuid.UUID
    asked: caller_view.Asked
    """The ranking (``discipline``, ``season``, ``tag``, ``by``, ``frozen``…)."""
    role: Role
    """The caller's: a frozen season shows members and admins different standings."""
    limit: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    body: bytes
    changes_at: dt.datetime | None = None
    """When the body changes by itself (a season's freeze or end), with no write."""


async def snapshot(db: Database, query: Query) -> Snapshot:
    """The body ``GET /leaderboard`` answers for these parameters (first page)."""
    # The stream's body is sent after the route returned (and with it the request's
    # organization): each snapshot acts for the caller's own (row-level security).
    with tenancy.acting_for(query.org_id):
        async with db.session(write=False) as session:
            chosen = await caller_view.choose(
                session, org_id=query.org_id, role=query.role, asked=query.asked
            )
            entries = await selection.ranking(
                session, org_id=query.org_id, selection=chosen.selection, limit=query.limit
            )
    changes_at = chosen.changes_at
    return Snapshot(dumps([caller_view.entry_json(e) for e in entries]), changes_at)


async def shared_snapshot(
    readmodel: ReadModel, db: Database, query: Query, version: int
) -> Snapshot:
    """The snapshot at ``version``, built once for every stream of the process with the
    same parameters (the read model's cache and its single flight per key/version):
    a change costs one query per distinct ranking, not one per stream."""
    wanted = f"{query.asked!r}&limit={query.limit}".encode()
    key = (query.org_id, f"stream.{query.role.value}", "/leaderboard/stream", wanted, b"")
    cached = readmodel.cache.get(key)
    if cached is not None and cached.current(version):
        return Snapshot(cached.body, _utc(cached.expires_at))

    async def build() -> Entry:
        found = await snapshot(db, query)
        until = None if found.changes_at is None else found.changes_at.timestamp()
        return Entry(version=version, body=found.body, etag="", expires_at=until)

    entry = await readmodel.load(key, version, build)
    return Snapshot(entry.body, _utc(entry.expires_at))


def _utc(timestamp: float | None) -> dt.datetime | None:
    return None if timestamp is None else dt.datetime.fromtimestamp(timestamp, dt.UTC)


def _seconds_until(when: dt.datetime | None) -> float:
    if when is None:
        return float("inf")
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def event(version: int, body: bytes) -> bytes:
    return b"event: leaderboard\nid: " + str(version).encode() + b"\ndata: " + body + b"\n\n"


HEARTBEAT = b": heartbeat\n\n"


async def events(
    *,
    db: Database,
    readmodel: ReadModel,
    settings: Settings,
    query: Query,
    last_event_id: int | None,
) -> AsyncIterator[bytes]:
    version = await readmodel.version(query.org_id) or 0
    last_sent = 0.0
    found = await shared_snapshot(readmodel, db, query, version)
    last_body: bytes | None = found.body
    changes_at = found.changes_at
    if last_event_id is None or last_event_id != version:
        yield event(version, found.body)
        last_sent = time.monotonic()
    else:
        yield b"retry: 2000\n\n"  # a resumed stream starts with nothing new to say
    last_write = time.monotonic()
    ends = time.monotonic() + settings.stream_max_seconds
    while time.monotonic() < ends:
        quiet = settings.stream_heartbeat_seconds - (time.monotonic() - last_write)
        quiet = min(quiet, ends - time.monotonic())
        boundary = _seconds_until(changes_at)
        newest = await readmodel.changes.wait(query.org_id, version, max(0.0, min(quiet, boundary)))
        if newest == version and boundary <= quiet:
            # A season's freeze or end passed: its standings changed with no write.
            found = await shared_snapshot(readmodel, db, query, version)
            changes_at = found.changes_at
            if found.body != last_body:
                last_body, last_sent = found.body, time.monotonic()
                yield event(version, found.body)
                last_write = last_sent
            continue
        if newest == version:
            if time.monotonic() - last_write >= settings.stream_heartbeat_seconds:
                yield HEARTBEAT
                last_write = time.monotonic()
            continue
        wait = settings.stream_min_interval_seconds - (time.monotonic() - last_sent)
        if wait > 0:
            await asyncio.sleep(wait)  # coalesce: what changes meanwhile goes in one event
        version = max(newest, await readmodel.version(query.org_id) or 0)
        found = await shared_snapshot(readmodel, db, query, version)
        body, changes_at = found.body, found.changes_at
        if body == last_body:
            continue  # the change did not alter this leaderboard
        last_body, last_sent = body, time.monotonic()
        yield event(version, body)
        last_write = last_sent


_RAW_HEADERS = tuple(
    StreamingResponse(
        iter(()),
        media_type=MEDIA_TYPE,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    ).raw_headers
)
"""Every stream's response headers, as Starlette writes them, made once."""


class EventStream(StreamingResponse):
    """An SSE response that gives its slot back however it ends (even unsent).

    It streams in the request's own task, with one small task that waits for the
    client's disconnect and then cancels the stream, where Starlette's
    ``StreamingResponse`` keeps an anyio task group of two tasks a response (the
    memory an open stream holds: docs/performance.md)."""

    media_type = MEDIA_TYPE

    def __init__(self, content: AsyncIterator[bytes], release: BackgroundTask) -> None:
        super().__init__(content, media_type=MEDIA_TYPE)
        self.raw_headers = list(_RAW_HEADERS)  # the pairs shared: kept for the stream's life
        self._release = release
        self._finished = False
        self._gone = False
        """The client disconnected: the listener cancelled the stream."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # One frame, no closures: it is kept for the stream's life (docs/performance.md).
        streaming = asyncio.current_task()
        assert streaming is not None
        try:
            start = {"type": "http.response.start", "status": self.status_code}
            await send({**start, "headers": self.raw_headers})
            listener = asyncio.get_running_loop().create_task(
                self._until_disconnect(receive, streaming)
            )
            try:
                async for chunk in self.body_iterator:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                self._finished = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except asyncio.CancelledError:
                if not self._gone or streaming.uncancel() > 0:
                    raise  # cancelled by someone else (the server's shutdown) too
            finally:
                self._finished = True
                listener.cancel()
        finally:
            await self._release()

    async def _until_disconnect(self, receive: Receive, streaming: asyncio.Task[Any]) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        if not self._finished:
            # The stream task is suspended inside the ``try`` of ``__call__``: it gets the
            # cancellation there.
            self._gone = True
            streaming.cancel()


def parse_last_event_id(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None

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
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from questline.config import Settings
from questline.leaderboard import standings
from questline.readmodel.cache import Entry
from questline.readmodel.http import dumps
from questline.readmodel.service import ReadModel
from questline.storage.db import Database
from questline.web.errors import ServiceUnavailable

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
    registry = getattr(app.state, "questline_streams", None)
    if registry is None:
        registry = app.state.questline_streams = Registry()
    return cast(Registry, registry)


@dataclass(frozen=True, slots=True)
class Query:
    org_id: uuid.UUID
    discipline_id: uuid.UUID | None
    limit: int


async def snapshot(db: Database, query: Query) -> bytes:
    """The body ``GET /leaderboard`` answers for these parameters (first page)."""
    async with db.session(write=False) as session:
        entries = await standings.ranking(
            session, org_id=query.org_id, limit=query.limit, discipline_id=query.discipline_id
        )
    return dumps(
        [
            {
                "Rank": e.rank,
                "TeamId": e.team_id,
                "Name": e.name,
                "Score": e.score,
                "TasksCompleted": e.tasks_completed,
                "ReachedAt": e.reached_at,
            }
            for e in entries
        ]
    )


async def shared_snapshot(readmodel: ReadModel, db: Database, query: Query, version: int) -> bytes:
    """The snapshot at ``version``, built once for every stream of the process with the
    same parameters (the read model's cache and its single flight per key/version):
    a change costs one query per distinct (discipline, limit), not one per stream."""
    wanted = f"discipline={query.discipline_id or ''}&limit={query.limit}".encode()
    key = (query.org_id, "stream", "/leaderboard/stream", wanted, b"")
    cached = readmodel.cache.get(key)
    if cached is not None and cached.version == version:
        return cached.body

    async def build() -> Entry:
        return Entry(version=version, body=await snapshot(db, query), etag="")

    return (await readmodel.load(key, version, build)).body


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
    last_body: bytes | None = None
    last_sent = 0.0
    if last_event_id is None or last_event_id != version:
        last_body = await shared_snapshot(readmodel, db, query, version)
        yield event(version, last_body)
        last_sent = time.monotonic()
    else:
        yield b"retry: 2000\n\n"  # a resumed stream starts with nothing new to say
    last_write = time.monotonic()
    ends = time.monotonic() + settings.stream_max_seconds
    while time.monotonic() < ends:
        quiet = settings.stream_heartbeat_seconds - (time.monotonic() - last_write)
        quiet = min(quiet, ends - time.monotonic())
        newest = await readmodel.changes.wait(query.org_id, version, max(0.0, quiet))
        if newest == version:
            if time.monotonic() - last_write >= settings.stream_heartbeat_seconds:
                yield HEARTBEAT
                last_write = time.monotonic()
            continue
        wait = settings.stream_min_interval_seconds - (time.monotonic() - last_sent)
        if wait > 0:
            await asyncio.sleep(wait)  # coalesce: what changes meanwhile goes in one event
        version = max(newest, await readmodel.version(query.org_id) or 0)
        body = await shared_snapshot(readmodel, db, query, version)
        if body == last_body:
            continue  # the change did not alter this leaderboard
        last_body, last_sent = body, time.monotonic()
        yield event(version, body)
        last_write = last_sent


class EventStream(StreamingResponse):
    """An SSE response that gives its slot back however it ends (even unsent)."""

    media_type = MEDIA_TYPE

    def __init__(self, content: AsyncIterator[bytes], release: BackgroundTask) -> None:
        super().__init__(
            content,
            media_type=MEDIA_TYPE,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._release()


def parse_last_event_id(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None

"""Thousands of open ``GET /leaderboard/stream`` connections, held by a raw asyncio client
(one socket and one small task a stream: the client must stay cheaper than the server).

* **Open**: ``count`` streams spread over organizations, each with its organization's
  member token; a stream counts as open once its first ``leaderboard`` event arrived.
  A 503 while opening (a worker reached its cap while the kernel gave the other worker
  fewer connections) is retried after a short pause.
* **Write → event**: completions of each organization's leader (the streamed top 10
  changes only when someone in it scores) posted to organizations whose streams are open; the
  time from each ``201`` to the first event on each of that organization's streams that
  shows the write: the leader with one more task completed. The event is recognised by
  its content, not by its ``id`` (the organization's version): the traffic running
  meanwhile bumps the same organizations' versions with writes that leave the top 10
  unchanged, which send no event, so "the first event at least the version read after the
  write" was the next change's (the withdrawal's, up to a second later: the 1,083 ms p99
  of the tenth session). An event that arrives before the client has read the ``201``
  counts as 0 ms (``before_201`` says how many did).
* **Past the caps**: more streams than the caps allow; every refusal must be a 503 with
  ``Retry-After``, and ``/healthz`` must keep answering meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

PATH = "/leaderboard/stream?limit=10"
EVENT = b"event: leaderboard\n"


@dataclass
class Stream:
    org: int
    status: int = 0
    retry_after: str | None = None
    events: list[tuple[float, str, int]] = field(default_factory=list)
    """(time.monotonic(), the leader's ``TeamId``, its ``TasksCompleted``) of each
    ``leaderboard`` event."""
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    writer: asyncio.StreamWriter | None = None


def _head(request_path: str, token: str) -> bytes:
    return (
        f"GET {request_path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()


async def _hold(stream: Stream, port: int, token: str) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        stream.status = -1
        stream.opened.set()
        return
    stream.writer = writer
    try:
        writer.write(_head(PATH, token))
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        stream.status = int(lines[0].split()[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "retry-after":
                stream.retry_after = value.strip()
        if stream.status != 200:
            stream.opened.set()
            return
        buffer = b""
        while chunk := await reader.read(65536):
            blocks, buffer = events_in(buffer + chunk)
            for block in blocks:
                stream.events.append((time.monotonic(), *_leader(block)))
            if blocks:
                stream.opened.set()
    except (OSError, asyncio.IncompleteReadError, ValueError):
        if stream.status == 0:
            stream.status = -1
    finally:
        stream.opened.set()
        writer.close()


def events_in(received: bytes) -> tuple[list[bytes], bytes]:
    """The whole ``leaderboard`` events in what a stream received (the body is chunked:
    each event is one chunk, after its size line), and what to keep for the next read."""
    blocks = []
    while (at := received.find(EVENT)) >= 0 and (end := received.find(b"\n\n", at)) >= 0:
        blocks.append(received[at:end])
        received = received[end + 2 :]
    if EVENT not in received:
        received = received[-len(EVENT) :]  # heartbeats and chunk framing; a partial start
    return blocks, received


def _leader(block: bytes) -> tuple[str, int]:
    """The leader's ``TeamId`` and ``TasksCompleted`` in an event's ``data`` line."""
    data = block[block.index(b"\ndata: ") + len(b"\ndata: ") :]
    top = json.loads(data)
    return (str(top[0]["TeamId"]), int(top[0]["TasksCompleted"])) if top else ("", 0)


async def open_one(port: int, org: int, token: str) -> Stream:
    stream = Stream(org=org)
    stream.task = asyncio.create_task(_hold(stream, port, token))
    await stream.opened.wait()
    return stream


async def open_many(
    port: int, plan: list[tuple[int, str]], *, batch: int = 100, retries: int = 20
) -> tuple[list[Stream], float, int]:
    """Open a stream for each (organization, token) of ``plan``; the streams, the seconds
    it took and how many 503s were retried."""
    started = time.monotonic()
    held: list[Stream] = []
    retried = 0
    todo = list(plan)
    for _ in range(retries):
        refused: list[tuple[int, str]] = []
        for start in range(0, len(todo), batch):
            part = todo[start : start + batch]
            opened = await asyncio.gather(*(open_one(port, org, tok) for org, tok in part))
            for (org, tok), stream in zip(part, opened, strict=True):
                if stream.status == 200:
                    held.append(stream)
                else:
                    refused.append((org, tok))
        if not refused:
            break
        retried += len(refused)
        todo = refused
        await asyncio.sleep(0.5)
    return held, time.monotonic() - started, retried


async def close_all(streams: list[Stream]) -> None:
    for stream in streams:
        if stream.task is not None:
            stream.task.cancel()
    await asyncio.gather(*(s.task for s in streams if s.task), return_exceptions=True)


@dataclass(frozen=True, slots=True)
class Write:
    org: int
    admin_token: str
    free_task: Callable[[str, int], str]
    """A task the team (id) has not completed, the n-th choice."""
    turn: int


@dataclass(frozen=True, slots=True)
class Done:
    """A completion that was written: what its event shows, and when."""

    org: int
    sent: float
    """``time.monotonic()`` when the ``POST`` was sent (one clock for the machine)."""
    answered: float
    """... and when its ``201`` was read."""
    team_id: str
    completed: int
    """The leader's ``TasksCompleted`` with this completion."""

    def as_json(self) -> list[Any]:
        return [self.org, self.sent, self.answered, self.team_id, self.completed]


async def post_writes(
    base_url: str, writes: list[Write], *, spacing: float
) -> tuple[list[Done], int]:
    """Completions one after another (``spacing`` seconds apart), each withdrawn after;
    the ones written, and how many were refused."""
    done: list[Done] = []
    refused = 0
    for write in writes:
        headers = {"Authorization": f"Bearer {write.admin_token}"}
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(
            base_url=base_url, headers=headers, limits=limits, timeout=30
        ) as client:
            # The leader's completion: an event only goes out when the streamed top 10
            # changes, and the leader's score is in it. One connection: the same worker,
            # which reads its own writes.
            top = (await client.get("/leaderboard?limit=1")).json()
            if not top:
                refused += 1
                continue
            team_id = str(top[0]["TeamId"])
            task_id = write.free_task(team_id, write.turn)
            sent = time.monotonic()
            answer = await client.post(f"/team/{team_id}/progress", json={"TaskId": task_id})
            answered = time.monotonic()
            if answer.status_code != 201:
                refused += 1
                continue
            completed = int(top[0]["TasksCompleted"]) + 1
            done.append(Done(write.org, sent, answered, team_id, completed))
            await asyncio.sleep(spacing)
            await client.delete(f"/team/{team_id}/progress/{task_id}")
    await asyncio.sleep(2)  # the last events
    return done, refused


@dataclass
class Arrivals:
    latencies_ms: list[float] = field(default_factory=list)
    missed: int = 0
    """Streams of a written organization that showed no event with the write."""
    before_201: int = 0
    """Events that arrived before the client read the write's ``201`` (counted 0 ms)."""


def arrivals(streams: list[Stream], writes: list[Done]) -> Arrivals:
    """For each write and each stream of its organization: the time (ms) from the write's
    ``201`` to the first event sent after it that shows it."""
    by_org: dict[int, list[Stream]] = {}
    for stream in streams:
        by_org.setdefault(stream.org, []).append(stream)
    found = Arrivals()
    for write in writes:
        for stream in by_org.get(write.org, []):
            arrival = next(
                (
                    t
                    for t, leader, completed in stream.events
                    if t >= write.sent and leader == write.team_id and completed >= write.completed
                ),
                None,
            )
            if arrival is None:
                found.missed += 1
                continue
            found.before_201 += arrival < write.answered
            found.latencies_ms.append(max(0.0, arrival - write.answered) * 1000)
    return found


def write_to_event(found: Arrivals, writes: int, refused: int) -> dict[str, Any]:
    ordered = sorted(found.latencies_ms)

    def pct(p: float) -> float | None:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1) if ordered else None

    return {
        "writes": writes,
        "writes_refused": refused,
        "samples": len(ordered),
        "missed": found.missed,
        "before_201": found.before_201,
        "p50_ms": round(statistics.median(ordered), 1) if ordered else None,
        "p99_ms": pct(0.99),
        "max_ms": round(ordered[-1], 1) if ordered else None,
    }


def more_files() -> None:
    """Every stream is a socket on both sides: the soft limit of open files up to the hard."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def past_the_caps(port: int, base_url: str, plan: list[tuple[int, str]]) -> dict[str, Any]:
    """Streams past the caps: their statuses and ``Retry-After``, and ``/healthz``'s
    latency meanwhile (a stalled worker would show)."""
    probes: list[float] = []

    async def probe() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            for _ in range(20):
                started = time.monotonic()
                await client.get("/healthz")
                probes.append((time.monotonic() - started) * 1000)
                await asyncio.sleep(0.05)

    prober = asyncio.create_task(probe())
    extra = await asyncio.gather(*(open_one(port, org, tok) for org, tok in plan))
    await prober
    statuses: dict[str, int] = {}
    for stream in extra:
        statuses[str(stream.status)] = statuses.get(str(stream.status), 0) + 1
    refused = [s for s in extra if s.status != 200]
    await close_all(extra)
    return {
        "tried": len(plan),
        "statuses": statuses,
        "refused_with_retry_after": sum(
            1 for s in refused if s.status == 503 and s.retry_after is not None
        ),
        "refused": len(refused),
        "healthz_max_ms": round(max(probes), 1) if probes else None,
        "healthz_p50_ms": round(statistics.median(probes), 1) if probes else None,
    }

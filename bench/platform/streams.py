"""Thousands of open ``GET /leaderboard/stream`` connections, held by a raw asyncio client
(one socket and one small task a stream: the client must stay cheaper than the server).

* **Open**: ``count`` streams spread over organizations, each with its organization's
  member token; a stream counts as open once its first ``leaderboard`` event arrived.
  A 503 while opening (a worker reached its cap while the kernel gave the other worker
  fewer connections) is retried after a short pause.
* **Write → event**: completions of each organization's leader (the streamed top 10
  changes only when someone in it scores) posted to organizations whose streams are open; the
  time from each ``201`` to the first event on each of that organization's streams whose
  ``id`` (the organization's version) is at least the write's. The write's version is read
  from the ``ETag`` of a ``GET /leaderboard`` sent right after it on the same connection
  (the same worker: read-your-writes), so it is never lower than the write's own.
* **Past the caps**: more streams than the caps allow; every refusal must be a 503 with
  ``Retry-After``, and ``/healthz`` must keep answering meanwhile.
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

PATH = "/leaderboard/stream?limit=10"
MARK = b"event: leaderboard\nid: "


@dataclass
class Stream:
    org: int
    status: int = 0
    retry_after: str | None = None
    events: list[tuple[int, float]] = field(default_factory=list)
    """(version, time.monotonic()) of each ``leaderboard`` event."""
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
            buffer += chunk
            while (at := buffer.find(MARK)) >= 0:
                end = buffer.find(b"\n", at + len(MARK))
                if end < 0:
                    break
                version = int(buffer[at + len(MARK) : end])
                stream.events.append((version, time.monotonic()))
                stream.opened.set()
                buffer = buffer[end:]
            buffer = buffer[-(len(MARK) + 24) :]
    except (OSError, asyncio.IncompleteReadError, ValueError):
        if stream.status == 0:
            stream.status = -1
    finally:
        stream.opened.set()
        writer.close()


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


def _version_of(etag: str) -> int:
    # "<org12>.<version>.<role>" (readmodel.http.version_etag)
    return int(etag.strip('"').split(".")[1])


@dataclass(frozen=True, slots=True)
class Write:
    org: int
    admin_token: str
    free_task: Callable[[str, int], str]
    """A task the team (id) has not completed, the n-th choice."""
    turn: int


async def post_writes(
    base_url: str, writes: list[Write], *, spacing: float
) -> tuple[list[tuple[int, float, int]], int]:
    """Completions one after another (``spacing`` seconds apart), each withdrawn after:
    (organization, ``time.monotonic()`` of the ``201``, the version it made) of each, and
    how many were refused."""
    done: list[tuple[int, float, int]] = []
    refused = 0
    for write in writes:
        headers = {"Authorization": f"Bearer {write.admin_token}"}
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(
            base_url=base_url, headers=headers, limits=limits, timeout=30
        ) as client:
            # The leader's completion: an event only goes out when the streamed top 10
            # changes, and the leader's score is in it.
            top = (await client.get("/leaderboard?limit=1")).json()
            if not top:
                refused += 1
                continue
            team_id = str(top[0]["TeamId"])
            task_id = write.free_task(team_id, write.turn)
            answer = await client.post(f"/team/{team_id}/progress", json={"TaskId": task_id})
            at = time.monotonic()
            if answer.status_code != 201:
                refused += 1
                continue
            etag = (await client.get("/leaderboard?limit=1")).headers.get("etag", "")
            done.append((write.org, at, _version_of(etag)))
            await asyncio.sleep(spacing)
            await client.delete(f"/team/{team_id}/progress/{task_id}")
    await asyncio.sleep(2)  # the last events
    return done, refused


def arrivals(
    streams: list[Stream], writes: list[tuple[int, float, int]]
) -> tuple[list[float], int]:
    """For each write and each stream of its organization: the time (ms) from the write
    to the first event at least its version; and how many streams saw none."""
    by_org: dict[int, list[Stream]] = {}
    for stream in streams:
        by_org.setdefault(stream.org, []).append(stream)
    latencies: list[float] = []
    missed = 0
    for org, at, version in writes:
        for stream in by_org.get(org, []):
            arrival = next((t for v, t in stream.events if v >= version and t >= at), None)
            if arrival is None:
                missed += 1
            else:
                latencies.append((arrival - at) * 1000)
    return latencies, missed


def write_to_event(
    latencies: list[float], missed: int, writes: int, refused: int
) -> dict[str, Any]:
    ordered = sorted(latencies)

    def pct(p: float) -> float | None:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1) if ordered else None

    return {
        "writes": writes,
        "writes_refused": refused,
        "samples": len(latencies),
        "missed": missed,
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

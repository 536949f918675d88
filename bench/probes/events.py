"""Events benchmarks: the live leaderboard's latency at many open streams, and one
organization's deliveries per second to a local receiver, per kind (webhooks, xAPI
statements, LTI grades).

    .venv/bin/python -m bench.probes.events [--backend sqlite|postgresql] [--streams 1000]
        [--writes 20] [--deliveries 2000] [--kinds webhooks,xapi,grades]

``--streams 0`` measures the deliveries alone.

Stream latency: ``--streams`` clients hold ``GET /leaderboard/stream?limit=10`` open
on one server process (on PostgreSQL the writes go through a second process, so each
event crosses processes through LISTEN/NOTIFY); then ``--writes`` completions are
recorded, one every 0.5 s, and for each the time from sending the write to each
stream's next event is taken (percentiles over every stream and write). The client
holding the streams runs on the same machine and is part of what is measured.

Delivery throughput, one organization per kind: its ``--deliveries`` items are
written through a server whose dispatchers are off — webhooks: a webhook on
``team.created`` and that many teams; xAPI: an LRS and that many completions (teams of
50 tasks, so each team's last completion adds a level and a discipline statement);
grades: a learning platform, that many members it knows (teams of four) and a
completion by each team, so a score for each member — then a server with its
dispatchers on starts, and the rate is the items received (each request answered at
once by a minimal asyncio HTTP receiver on loopback: 204 to a webhook, 200 to a batch of
statements, the platform's token, line item and 200 to a score) per second from the
first to the last. The
sending process's CPU time over the same span (``/proc``), divided by the items, is
``cpu_ms_per_delivery``: what a delivery costs whatever else the machine runs.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from tests.support.live import LiveServer
from tests.support.postgres import PostgresServer

from bench.harness.api import one_level_discipline
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role

TASKS_PER_TEAM = 50
JWT_SECRET = "questline-benchmark-secret-not-for-production-use-0123456789"


def env_for(data_dir: Path, url: str | None, **extra: str) -> dict[str, str]:
    env = {
        "QUESTLINE_DATA_DIR": str(data_dir),
        "QUESTLINE_JWT_SECRET": JWT_SECRET,
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_STREAM_MAX_PER_ORGANIZATION": "100000",
        "QUESTLINE_STREAM_MAX_PER_PROCESS": "100000",
        "QUESTLINE_SERVER_MAX_CONNECTIONS": "5000",
        "QUESTLINE_WEBHOOKS_ALLOW_PRIVATE_URLS": "true",
        "QUESTLINE_WEBHOOKS_POLL_SECONDS": "0.2",
        "QUESTLINE_PUBLIC_URL": "https://questline.bench",
        "QUESTLINE_XAPI_ALLOW_PRIVATE_URLS": "true",
        "QUESTLINE_XAPI_POLL_SECONDS": "0.2",
        "QUESTLINE_LTI_ALLOW_HTTP": "true",
        "QUESTLINE_LTI_ALLOW_PRIVATE_URLS": "true",
        "QUESTLINE_LTI_GRADES_POLL_SECONDS": "0.2",
        **extra,
    }
    if url:
        env["QUESTLINE_DATABASE_URL"] = url
        env["QUESTLINE_DATABASE_ROW_SECURITY"] = "false"  # the database's owner: one role
    return env


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def hold_stream(
    client: httpx.AsyncClient, arrivals: list[float], ready: asyncio.Event, opened: list[int]
) -> None:
    async with client.stream("GET", "/leaderboard/stream", params={"limit": 10}) as response:
        assert response.status_code == 200, response.status_code
        first = True
        async for line in response.aiter_lines():
            if not line.startswith("event:"):
                continue
            if first:
                first = False
                opened.append(1)
                ready.set()
                continue
            arrivals.append(time.monotonic())


async def stream_latency(
    reader_url: str, writer_url: str, admin: str, member: str, streams: int, writes: int
) -> dict[str, Any]:
    admin_h = {"Authorization": f"Bearer {admin}"}
    async with httpx.AsyncClient(base_url=writer_url, headers=admin_h, timeout=60) as writer:
        created = await writer.post(
            "/discipline",
            json={
                "Title": "Bench",
                "Description": "x",
                "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [
                    {"Title": f"T{i}", "Points": 1 + i} for i in range(writes)
                ]}]}],
            },
        )  # fmt: skip
        tasks = [t["Id"] for t in created.json()["Levels"][0]["Quests"][0]["Tasks"]]
        teams = [
            (await writer.post("/team", json={"name": f"B{i}"})).json()["Id"] for i in range(20)
        ]
        limits = httpx.Limits(max_connections=streams + 10, max_keepalive_connections=0)
        member_h = {"Authorization": f"Bearer {member}"}
        async with httpx.AsyncClient(
            base_url=reader_url, headers=member_h, limits=limits, timeout=None
        ) as reader:
            per_stream: list[list[float]] = [[] for _ in range(streams)]
            ready = asyncio.Event()
            opened: list[int] = []
            holders = []
            started = time.monotonic()
            for index in range(streams):
                holders.append(
                    asyncio.create_task(hold_stream(reader, per_stream[index], ready, opened))
                )
                if index % 50 == 49:
                    await asyncio.sleep(0.05)
            while len(opened) < streams:
                await asyncio.sleep(0.05)
                if time.monotonic() - started > 300:
                    raise TimeoutError(f"only {len(opened)} streams opened")
            open_seconds = time.monotonic() - started
            await asyncio.sleep(1)
            sent: list[float] = []
            for index in range(writes):
                sent.append(time.monotonic())
                response = await writer.post(
                    f"/team/{teams[index % len(teams)]}/progress", json={"TaskId": tasks[index]}
                )
                assert response.status_code == 201, response.text
                await asyncio.sleep(0.5)
            await asyncio.sleep(3)
            for holder in holders:
                holder.cancel()
            await asyncio.gather(*holders, return_exceptions=True)
    latencies: list[float] = []
    missed = 0
    for arrivals in per_stream:
        for index, at in enumerate(sent):
            after = [a for a in arrivals if a >= at]
            nxt = sent[index + 1] if index + 1 < len(sent) else float("inf")
            hit = [a for a in after if a < nxt]
            if hit:
                latencies.append((hit[0] - at) * 1000)
            else:
                missed += 1
    return {
        "streams": streams,
        "writes": writes,
        "open_seconds": round(open_seconds, 2),
        "events": len(latencies),
        "missed": missed,
        "p50_ms": round(percentile(latencies, 50), 1) if latencies else None,
        "p95_ms": round(percentile(latencies, 95), 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 99), 1) if latencies else None,
        "max_ms": round(max(latencies), 1) if latencies else None,
        "mean_ms": round(statistics.mean(latencies), 1) if latencies else None,
    }


HOST = "127.0.0.1"


def ok_json(value: Any) -> bytes:
    body = json.dumps(value).encode()
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Receiver:
    """A minimal HTTP/1.1 server answering every request at once (keep-alive): 204, or
    200 to a batch of xAPI statements (each statement counts as a delivery)."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.received = 0
        self.first_items = 0
        self.first: float | None = None
        self.last = 0.0
        self.ids: set[str] = set()
        self.pid: int | None = None
        self.cpu: list[float] = []
        self.port = 0
        """Where it listens (set once it does)."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, target = head.split(b" ", 2)[:2]
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                    elif name.lower() == b"webhook-id":
                        self.ids.add(value.strip().decode())
                body = await reader.readexactly(length)
                writer.write(self.answer(method, target.decode(), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def answer(self, method: bytes, target: str, body: bytes) -> bytes:
        """The response to one request; what it delivers is counted."""
        if target.startswith("/lti/"):
            return self.platform_answer(method, target, body)
        batch = json.loads(body) if body.startswith(b"[") else None
        if batch is None:
            self.count(1)
            return b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n"
        self.ids.update(str(statement["id"]) for statement in batch)
        self.count(len(batch))
        return ok_json([s["id"] for s in batch])

    def platform_answer(self, method: bytes, target: str, body: bytes) -> bytes:
        """A learning platform's token endpoint and line items service (LTI AGS): a
        score posted to a line item is a delivery."""
        if target == "/lti/token":
            return ok_json({"access_token": "bench", "token_type": "Bearer", "expires_in": 3600})
        if method == b"GET":  # the line items of a resource: none yet
            return ok_json([])
        if target.endswith("/scores"):
            self.ids.add(json.loads(body)["userId"])
            self.count(1)
            return b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
        made = json.loads(body)  # a line item
        item = f"http://{HOST}:{self.port}/lti/lineitems/{made['resourceId']}"
        return ok_json({**made, "id": item})

    def watch(self, pid: int) -> None:
        """Take the sending process's CPU from now: when its first deliveries arrived
        before its pid was known (it started sending before it answered as healthy),
        the span starts here, with what has arrived so far."""
        self.pid = pid
        if self.first is not None and not self.cpu:
            self.first = time.monotonic()
            self.first_items = self.received
            self.cpu.append(cpu_seconds(pid))

    def count(self, items: int) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = now
            self.received = self.first_items = items
            if self.pid is not None:
                self.cpu.append(cpu_seconds(self.pid))
            return
        self.received += items
        self.last = now
        if self.received >= self.expected and self.pid is not None and len(self.cpu) == 1:
            self.cpu.append(cpu_seconds(self.pid))


async def write_webhook_items(
    client: httpx.AsyncClient, port: int, items: int, settings: Settings
) -> int:
    """A webhook on ``team.created`` and ``items`` teams: one delivery each."""
    hook = await client.post(
        "/webhook", json={"url": f"http://127.0.0.1:{port}/hook", "events": ["team.created"]}
    )
    assert hook.status_code == 201, hook.text
    for index in range(items):
        response = await client.post("/team", json={"name": f"W{index}"})
        assert response.status_code == 201
    return items


async def write_xapi_items(
    client: httpx.AsyncClient, port: int, items: int, settings: Settings
) -> int:
    """An LRS and ``items`` completions (rounded up to whole teams of ``TASKS_PER_TEAM``
    tasks): one statement each, and a level and a discipline statement a team."""
    lrs = await client.put(
        "/organization/xapi",
        json={"Endpoint": f"http://127.0.0.1:{port}/xapi", "Username": "b", "Password": "b"},
    )
    assert lrs.status_code == 201, lrs.text
    tasks = await one_level_discipline(client, [1 + i for i in range(TASKS_PER_TEAM)])
    teams = -(-items // TASKS_PER_TEAM)
    for index in range(teams):
        team = (await client.post("/team", json={"name": f"X{index}"})).json()["Id"]
        for task in tasks:
            done = await client.post(f"/team/{team}/progress", json={"TaskId": task})
            assert done.status_code == 201, done.text
    return teams * (TASKS_PER_TEAM + 2)


MEMBERS_PER_TEAM = 4


async def write_grades_items(
    client: httpx.AsyncClient, port: int, items: int, settings: Settings
) -> int:
    """A learning platform on the receiver, and ``items`` people it knows (rounded up to
    whole teams of ``MEMBERS_PER_TEAM``) whose team then completes a task: a score for
    each. What launches would have stored (the person behind each member, the line items
    service) is written to the database before the completions (``link_platform``): a
    completion's scores are decided as it is recorded."""
    base = f"http://{HOST}:{port}/lti"
    platform = await client.post(
        "/lti/platform",
        json={
            "Issuer": f"{base}/issuer",
            "ClientId": "bench",
            "DeploymentIds": ["1"],
            "AuthLoginUrl": f"{base}/login",
            "AuthTokenUrl": f"{base}/token",
            "KeySetUrl": f"{base}/jwks",
        },
    )
    assert platform.status_code == 201, platform.text
    [task] = await one_level_discipline(client, [1])
    teams: list[str] = []
    for index in range(-(-items // MEMBERS_PER_TEAM)):
        team = (await client.post("/team", json={"name": f"G{index}"})).json()["Id"]
        teams.append(team)
        for place in range(MEMBERS_PER_TEAM):
            joined = await client.post(
                f"/team/{team}/members",
                json={"givenName": f"G{index}-{place}", "email": f"g{index}-{place}@example.org"},
            )
            assert joined.status_code == 201, joined.text
    await link_platform(settings, port)
    for team in teams:
        done = await client.post(f"/team/{team}/progress", json={"TaskId": task})
        assert done.status_code == 201, done.text
    return len(teams) * MEMBERS_PER_TEAM


async def link_platform(settings: Settings, port: int) -> None:
    """What launches from the platform would have stored: its line items service, and the
    platform's person (``lti_people``) behind every member of the organization."""
    engine = create_async_engine(settings.resolved_owner_url)
    async with engine.begin() as connection:
        await connection.execute(
            text("UPDATE lti_platforms SET lineitems_url = :url"),
            {"url": f"http://{HOST}:{port}/lti/lineitems"},
        )
        await connection.execute(
            text(
                "INSERT INTO lti_people (organization_id, platform_id, subject, member_id, "
                "roster_deactivated, created_at) "
                "SELECT m.organization_id, p.id, 'person-' || m.email, m.id, :no, :now "
                "FROM members m JOIN lti_platforms p ON p.organization_id = m.organization_id"
            ),
            {"no": False, "now": dt.datetime.now(dt.UTC)},
        )
    await engine.dispose()


WRITERS = {
    "webhooks": write_webhook_items,
    "xapi": write_xapi_items,
    "grades": write_grades_items,
}


async def delivery_throughput(
    kind: str, settings: Settings, admin: str, items: int, tmp: Path
) -> dict[str, Any]:
    """One organization's deliveries of ``kind`` per second (see the module's doc)."""
    data_dir, url = settings.data_dir, settings.database_url
    server = None
    quiet = LiveServer(
        env=env_for(
            data_dir,
            url,
            QUESTLINE_WEBHOOKS_DISPATCHER_ENABLED="false",
            QUESTLINE_XAPI_DISPATCHER_ENABLED="false",
            QUESTLINE_LTI_GRADES_DISPATCHER_ENABLED="false",
        ),
        log_path=tmp / f"quiet-{kind}.log",
    )
    receiver = Receiver(0)
    server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0)
    port = receiver.port = server.sockets[0].getsockname()[1]
    await asyncio.to_thread(quiet.start)
    headers = {"Authorization": f"Bearer {admin}"}
    try:
        async with httpx.AsyncClient(base_url=quiet.url, headers=headers, timeout=60) as client:
            receiver.expected = await WRITERS[kind](client, port, items, settings)
    finally:
        quiet.stop()
    sender = LiveServer(env=env_for(data_dir, url), log_path=tmp / f"sender-{kind}.log")
    await asyncio.to_thread(sender.start)
    assert sender.process is not None
    receiver.watch(sender.process.pid)
    try:
        deadline = time.monotonic() + 600
        while receiver.received < receiver.expected and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    finally:
        sender.stop()
        server.close()
    span = receiver.last - receiver.first if receiver.first is not None else 0.0
    cpu = receiver.cpu[1] - receiver.cpu[0] if len(receiver.cpu) == 2 else None
    rest = receiver.received - receiver.first_items
    return {
        "deliveries": receiver.expected,
        "received": receiver.received,
        "distinct_ids": len(receiver.ids),
        "seconds": round(span, 2),
        # The first request's items arrived at the span's start: the rate is of the rest.
        "per_second": round(rest / span, 1) if span else None,
        "cpu_ms_per_delivery": round(cpu * 1000 / rest, 2) if cpu is not None and rest else None,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="questline-bench-events-"))
    postgres: PostgresServer | None = None
    servers: list[LiveServer] = []
    try:
        url = None
        if args.backend == "postgresql":
            postgres = PostgresServer().start()
            url = postgres.create_database("bench_events")
        data_dir = workdir / "data"
        settings = Settings(
            data_dir=data_dir,
            database_url=url,
            database_row_security=False,
            jwt_secret=JWT_SECRET,
            _env_file=None,
        )
        await asyncio.to_thread(upgrade, settings)
        tokens = TokenService(settings)
        org = uuid.uuid4()
        life = dt.timedelta(hours=2)
        admin = tokens.mint(role=Role.ADMIN, org_id=org, subject="bench", lifetime=life)
        member = tokens.mint(role=Role.MEMBER, org_id=org, subject="bench", lifetime=life)
        result: dict[str, Any] = {"backend": args.backend}
        count = (2 if args.backend == "postgresql" else 1) if args.streams else 0
        for index in range(count):
            server = LiveServer(
                env=env_for(data_dir, url, QUESTLINE_WEBHOOKS_DISPATCHER_ENABLED="false"),
                log_path=workdir / f"stream{index}.log",
            )
            servers.append(await asyncio.to_thread(server.start))
        if args.streams:
            result["stream"] = await stream_latency(
                servers[0].url, servers[-1].url, admin, member, args.streams, args.writes
            )
        for server in servers:
            server.stop()
        servers.clear()
        for kind in args.kinds.split(","):
            other = uuid.uuid4()  # one organization per kind
            kind_admin = tokens.mint(role=Role.ADMIN, org_id=other, subject="bench", lifetime=life)
            result[kind] = await delivery_throughput(
                kind, settings, kind_admin, args.deliveries, workdir
            )
        return result
    finally:
        for server in servers:
            server.stop()
        if postgres is not None:
            postgres.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=20)
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument(
        "--kinds", default="webhooks,xapi,grades", help="of: webhooks, xapi, grades"
    )
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()

"""Bounded load test: a live server (2 workers) on a harness-started PostgreSQL.

    .venv/bin/python -m bench.probes.load [--seconds 60] [--clients 50] [--workers 2]

Everything runs on this machine (loopback only) and stops by itself. 50 concurrent
clients (httpx, asyncio) mix reads (``GET /team``, ``GET /team/{id}``), member
additions and, where the progress endpoints exist, task completions and withdrawals.
At the end it checks that no request failed and that the data is consistent:

* every team's ``MemberCount`` is the number of members the clients added (201s);
* with ``/team/{id}/progress`` and ``/team/{id}/graph``: every team's ``Score`` equals
  the sum of the points of its completed tasks and the last point of its graph.

It prints requests, errors and the verdict, and exits non-zero on any error or
inconsistency. Rate limits are off in the server: this measures correctness under
load, not the limiter (tests/web/test_ratelimit.py does that).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import secrets
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tests.support.live import LiveServer
from tests.support.postgres import PostgresServer

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role

TEAMS = 20
LEVELS, QUESTS, TASKS = 3, 3, 4  # 36 tasks with points 1..36


@dataclass
class Stats:
    requests: collections.Counter[str] = field(default_factory=collections.Counter)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    samples: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    members_added: collections.Counter[str] = field(default_factory=collections.Counter)

    def error(self, what: str, detail: str) -> None:
        self.errors[what] += 1
        if len(self.samples) < 10:
            self.samples.append(f"{what}: {detail[:300]}")


@dataclass
class World:
    headers: dict[str, str]
    team_ids: list[str]
    task_ids: list[str]
    has_progress: bool
    has_graph: bool


def _discipline_document() -> dict[str, Any]:
    points = iter(range(1, LEVELS * QUESTS * TASKS + 1))
    return {
        "Title": "Load discipline",
        "Description": "Tasks for the load test.",
        "Levels": [
            {
                "Title": f"Level {level}",
                "Description": "-",
                "Quests": [
                    {
                        "Title": f"Quest {quest}",
                        "Description": "-",
                        "Tasks": [
                            {"Title": f"Task {task}", "Description": "-", "Points": next(points)}
                            for task in range(TASKS)
                        ],
                    }
                    for quest in range(QUESTS)
                ],
            }
            for level in range(LEVELS)
        ],
    }


def _task_ids(document: dict[str, Any]) -> list[str]:
    return [
        task["Id"]
        for level in document["Levels"]
        for quest in level["Quests"]
        for task in quest["Tasks"]
    ]


async def seed(client: httpx.AsyncClient, headers: dict[str, str]) -> World:
    paths = (await client.get("/openapi.json")).json()["paths"]
    team_ids = []
    for index in range(TEAMS):
        response = await client.post("/team", json={"name": f"Load {index:02d}"}, headers=headers)
        response.raise_for_status()
        team_ids.append(response.json()["Id"])
    has_progress = "post" in paths.get("/team/{team_id}/progress", {})
    task_ids: list[str] = []
    if has_progress and "post" in paths.get("/discipline", {}):
        created = await client.post("/discipline", json=_discipline_document(), headers=headers)
        created.raise_for_status()
        task_ids = _task_ids(created.json())
    return World(
        headers=headers,
        team_ids=team_ids,
        task_ids=task_ids,
        has_progress=has_progress and bool(task_ids),
        has_graph="get" in paths.get("/team/{team_id}/graph", {}),
    )


async def one_request(client: httpx.AsyncClient, world: World, stats: Stats) -> None:
    """One operation, chosen at random; records what it got."""
    team = random.choice(world.team_ids)
    roll = random.random()
    if world.has_progress and roll < 0.2:
        op, expected = "complete", {200, 201}
        body = {"TaskId": random.choice(world.task_ids)}
        call = client.post(f"/team/{team}/progress", json=body, headers=world.headers)
    elif world.has_progress and roll < 0.3:
        op, expected = "withdraw", {204, 404}  # 404: the team had not completed it
        task = random.choice(world.task_ids)
        call = client.delete(f"/team/{team}/progress/{task}", headers=world.headers)
    elif roll < 0.4:
        op, expected = "add member", {201}
        body = {"email": f"{uuid.uuid4().hex}@load.example", "givenName": "Load"}
        call = client.post(f"/team/{team}/members", json=body, headers=world.headers)
    elif roll < 0.7:
        op, expected = "GET /team", {200}
        call = client.get("/team", headers=world.headers)
    else:
        op, expected = "GET /team/{id}", {200}
        call = client.get(f"/team/{team}", headers=world.headers)
    started = time.perf_counter()
    try:
        response = await call
    except httpx.HTTPError as exc:
        stats.requests[op] += 1
        stats.error(op, f"{type(exc).__name__}: {exc}")
        return
    stats.latencies.append(time.perf_counter() - started)
    stats.requests[op] += 1
    if response.status_code not in expected:
        stats.error(f"{op} {response.status_code}", response.text)
    elif op == "add member":
        stats.members_added[team] += 1


async def client_loop(
    client: httpx.AsyncClient, world: World, stats: Stats, deadline: float
) -> None:
    while time.monotonic() < deadline:
        await one_request(client, world, stats)


async def verify(client: httpx.AsyncClient, world: World, stats: Stats) -> list[str]:
    """Every inconsistency found, as text (empty: consistent)."""
    problems: list[str] = []
    for team_id in world.team_ids:
        detail = (await client.get(f"/team/{team_id}", headers=world.headers)).json()
        if (
            detail["MemberCount"] != stats.members_added[team_id]
            or len(detail["Members"]) != (stats.members_added[team_id])
        ):
            problems.append(
                f"team {team_id}: MemberCount {detail['MemberCount']}, "
                f"{len(detail['Members'])} listed, {stats.members_added[team_id]} added"
            )
        if not world.has_progress:
            continue
        completions = (await client.get(f"/team/{team_id}/progress", headers=world.headers)).json()
        earned = sum(c["Points"] for c in completions)
        if detail["Score"] != earned:
            problems.append(f"team {team_id}: Score {detail['Score']} != {earned} earned")
        if world.has_graph:
            graph = (await client.get(f"/team/{team_id}/graph", headers=world.headers)).json()
            last = graph["Points"][-1]["Score"] if graph["Points"] else 0
            if last != detail["Score"]:
                problems.append(f"team {team_id}: graph ends at {last}, Score {detail['Score']}")
    return problems


def _percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


async def run(url: str, headers: dict[str, str], seconds: float, clients: int) -> int:
    limits = httpx.Limits(max_connections=clients + 5, max_keepalive_connections=clients + 5)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
        world = await seed(client, headers)
        stats = Stats()
        started = time.monotonic()
        deadline = started + seconds
        await asyncio.gather(*(client_loop(client, world, stats, deadline) for _ in range(clients)))
        elapsed = time.monotonic() - started
        problems = await verify(client, world, stats)
    total = sum(stats.requests.values())
    print(f"clients: {clients}, duration: {elapsed:.1f} s, teams: {len(world.team_ids)}")
    print(f"requests: {total} ({total / elapsed:.0f}/s)")
    for op, count in sorted(stats.requests.items()):
        print(f"  {op:<16} {count}")
    lat = stats.latencies
    print(
        f"latency ms: p50 {_percentile(lat, 0.5):.1f}, p95 {_percentile(lat, 0.95):.1f}, "
        f"p99 {_percentile(lat, 0.99):.1f}"
    )
    print(f"errors: {sum(stats.errors.values())}")
    for what, count in sorted(stats.errors.items()):
        print(f"  {what}: {count}")
    for sample in stats.samples:
        print(f"  e.g. {sample}")
    checks = "member counts" + (
        ", Score = sum of completed points = last graph point" if world.has_progress else ""
    )
    verdict = "consistent" if not problems else f"INCONSISTENT ({len(problems)})"
    print(f"consistency ({checks}): {verdict}")
    for problem in problems[:20]:
        print(f"  {problem}")
    return 0 if not problems and not stats.errors else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="questline-load-"))
    postgres = PostgresServer().start()
    server: LiveServer | None = None
    try:
        database_url = postgres.create_database("questline_load")
        secret = secrets.token_urlsafe(32)
        settings = Settings(
            data_dir=root,
            database_url=database_url,
            database_row_security=False,
            jwt_secret=secret,
            _env_file=None,
        )  # type: ignore[call-arg]
        upgrade(settings)
        env = {
            "QUESTLINE_DATABASE_URL": database_url,
            "QUESTLINE_DATABASE_ROW_SECURITY": "false",
            "QUESTLINE_DATA_DIR": str(root),
            "QUESTLINE_JWT_SECRET": secret,
            "QUESTLINE_RATE_LIMIT_ENABLED": "false",
            "QUESTLINE_LOG_LEVEL": "WARNING",
            "QUESTLINE_DATABASE_POOL_SIZE": "20",
        }
        server = LiveServer(env=env, log_path=root / "server.log", workers=args.workers).start()
        token = TokenService(settings).mint(role=Role.ADMIN, org_id=uuid.uuid4(), subject="load")
        headers = {"Authorization": f"Bearer {token}"}
        print(f"server: {server.url} ({args.workers} workers) on PostgreSQL {postgres.port}")
        return asyncio.run(run(server.url, headers, args.seconds, args.clients))
    finally:
        if server is not None:
            server.stop()
        postgres.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())

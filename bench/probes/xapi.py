"""xAPI benchmarks: statements per second delivered to a Ralph LRS on loopback, and the
time from a completion to its statement in the LRS.

    .venv/bin/python -m bench.probes.xapi [--backend sqlite|postgresql] [--statements 500]
        [--writes 10]

Throughput: ``--statements`` completions (teams of 50 tasks each, in a discipline of
one level, so no level completes before a team's last task) are recorded through a
server whose dispatchers are off; then a server with its dispatchers on starts, and the
rate is the statements the LRS holds per second from the first to the last (read by
polling Ralph's ``GET /xAPI/statements``; the last team's level and discipline
statements are counted too). Latency: with that server running, ``--writes``
completions are sent one at a time, and for each the time from sending the write to
its statement being readable from the LRS is taken (polled every 100 ms: part of the
figure, and each poll is work for the LRS). Ralph (tests/support/ralph_lrs.py) runs on
the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from tests.support.live import LiveServer
from tests.support.postgres import PostgresServer
from tests.support.ralph_lrs import RalphServer, RalphUser

from bench.harness.api import one_level_discipline
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role

JWT_SECRET = "questline-benchmark-secret-not-for-production-use-0123456789"
TASKS_PER_TEAM = 50


def env_for(data_dir: Path, url: str | None, **extra: str) -> dict[str, str]:
    env = {
        "QUESTLINE_DATA_DIR": str(data_dir),
        "QUESTLINE_JWT_SECRET": JWT_SECRET,
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_PUBLIC_URL": "https://questline.bench",
        "QUESTLINE_XAPI_ALLOW_PRIVATE_URLS": "true",
        "QUESTLINE_XAPI_POLL_SECONDS": "0.2",
        "QUESTLINE_WEBHOOKS_POLL_SECONDS": "0.2",
        **extra,
    }
    if url:
        env["QUESTLINE_DATABASE_URL"] = url
        env["QUESTLINE_DATABASE_ROW_SECURITY"] = "false"  # the database's owner: one role
    return env


async def stored(client: httpx.AsyncClient) -> int:
    """The statements the LRS holds (one GET of up to 100,000)."""
    response = await client.get("/xAPI/statements", params={"limit": 100_000})
    response.raise_for_status()
    return len(response.json()["statements"])


async def prepare(client: httpx.AsyncClient, statements: int, writes: int) -> list[Any]:
    """A discipline of one level, teams, and the (team, task) pairs to complete."""
    tasks = await one_level_discipline(client, [1 + i for i in range(TASKS_PER_TEAM)])
    pairs: list[Any] = []
    team_count = -(-(statements + writes) // TASKS_PER_TEAM)
    for index in range(team_count):
        team = (await client.post("/team", json={"name": f"X{index}"})).json()["Id"]
        pairs.extend((team, task) for task in tasks)
    return pairs[: statements + writes]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="questline-bench-xapi-"))
    postgres: PostgresServer | None = None
    user = RalphUser("bench", "bench-password")
    ralph = RalphServer(users=[user])
    servers: list[LiveServer] = []
    try:
        await asyncio.to_thread(ralph.start)
        url = None
        if args.backend == "postgresql":
            postgres = PostgresServer().start()
            url = postgres.create_database("bench_xapi")
        data_dir = workdir / "data"
        settings = Settings(
            data_dir=data_dir,
            database_url=url,
            database_row_security=False,
            jwt_secret=JWT_SECRET,
            _env_file=None,
        )
        await asyncio.to_thread(upgrade, settings)
        org = uuid.uuid4()
        admin = TokenService(settings).mint(
            role=Role.ADMIN, org_id=org, subject="bench", lifetime=dt.timedelta(hours=2)
        )
        headers = {"Authorization": f"Bearer {admin}"}
        quiet = LiveServer(
            env=env_for(
                data_dir,
                url,
                QUESTLINE_WEBHOOKS_DISPATCHER_ENABLED="false",
                QUESTLINE_XAPI_DISPATCHER_ENABLED="false",
            ),
            log_path=workdir / "quiet.log",
        )
        servers.append(await asyncio.to_thread(quiet.start))
        async with httpx.AsyncClient(base_url=quiet.url, headers=headers, timeout=60) as client:
            lrs = await client.put(
                "/organization/xapi",
                json={"Endpoint": ralph.endpoint, "Username": "bench", "Password": user.password},
            )
            assert lrs.status_code == 201, lrs.text
            pairs = await prepare(client, args.statements, args.writes)
            for team, task in pairs[: args.statements]:
                done = await client.post(f"/team/{team}/progress", json={"TaskId": task})
                assert done.status_code == 201, done.text
        quiet.stop()
        servers.clear()
        expected = args.statements + 2 * (args.statements // TASKS_PER_TEAM)
        result: dict[str, Any] = {"backend": args.backend, "statements": expected}
        async with httpx.AsyncClient(
            base_url=ralph.url, auth=user.auth, timeout=60,
            headers={"X-Experience-API-Version": "1.0.3"},
        ) as lrs_client:  # fmt: skip
            busy = LiveServer(env=env_for(data_dir, url), log_path=workdir / "busy.log")
            servers.append(await asyncio.to_thread(busy.start))
            first: float | None = None
            first_count = 0
            give_up = time.monotonic() + 600
            while time.monotonic() < give_up:
                count = await stored(lrs_client)
                now = time.monotonic()
                if count and first is None:
                    first, first_count = now, count
                if count >= expected:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"the LRS holds {count} of {expected} statements")
            span = now - first if first is not None else 0
            result["per_second"] = round((count - first_count) / span, 1) if span else None
            latencies: list[float] = []
            async with httpx.AsyncClient(base_url=busy.url, headers=headers) as client:
                for team, task in pairs[args.statements :]:
                    before = await stored(lrs_client)
                    started = time.monotonic()
                    done = await client.post(f"/team/{team}/progress", json={"TaskId": task})
                    assert done.status_code == 201, done.text
                    while await stored(lrs_client) <= before:
                        if time.monotonic() - started > 120:
                            raise AssertionError("no statement in the LRS after 2 minutes")
                        await asyncio.sleep(0.1)
                    latencies.append((time.monotonic() - started) * 1000)
            result["completion_to_lrs_ms"] = {
                "p50": round(statistics.median(latencies), 1),
                "max": round(max(latencies), 1),
                "writes": len(latencies),
            }
        return result
    finally:
        for server in servers:
            server.stop()
        ralph.stop()
        if postgres is not None:
            postgres.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--statements", type=int, default=500)
    parser.add_argument("--writes", type=int, default=10)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()

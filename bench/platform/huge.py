"""One huge organization (issue 30).

* **Reads**: every read row of ``make bench`` (bench/harness/rows.py) at 100,000 and at
  1,000,000 teams in one organization, through bench/run.py's own runner (seeded the same
  way, ``questline serve`` with the same workers); the p50 slope between the two sizes,
  and the bare endpoint's drift between them (how much slower the machine was).
* **The whole list**: ``GET /team`` of every team at each size, streamed to a client that
  discards it; each worker's resident memory sampled every 50 ms while it is sent. Its
  growth must not follow the body's size.
* **Bulk import** (PostgreSQL): ``POST /team/bulk`` of 1,000,000 teams with 3 members each
  (CSV: members created by e-mail, as ``questline import`` sends them) into a new
  organization of the same server, in batches of the server's largest (10,000 teams) sent
  by ``CLIENTS`` clients at once; teams a second over the whole import.

Quick: 10,000 and 100,000 teams, 100,000 imported.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import threading
import time
import uuid
from typing import Any

import httpx

from bench import run as bench_run
from bench.harness.measure import Context
from bench.harness.rows import ROWS
from bench.harness.service import JWT_SECRET
from bench.platform import memory
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.web.identity import Role

SIZES = {"quick": [10_000, 100_000], "full": [100_000, 1_000_000]}
BATCH = 10_000
"""Teams a bulk request: the server's default ``QUESTLINE_MAX_BULK_TEAMS``."""
MEMBERS = 3
CLIENTS = 4
SLOPE_LIMIT = 2.0
IMPORT_GOAL = 50_000
"""Teams a second (issue 30), on PostgreSQL."""
READ_ROWS = frozenset(row.name for row in ROWS if not row.writes)


def whole_list(ctx: Context, teams: int) -> dict[str, Any]:
    """``GET /team`` of every team, the workers' resident memory sampled meanwhile."""
    service = ctx.service
    assert service.process is not None
    pid = service.process.pid
    before = memory.workers_rss_kib(pid)
    peak = dict(before)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            for worker, kib in memory.workers_rss_kib(pid).items():
                peak[worker] = max(peak.get(worker, 0), kib)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started, size = time.monotonic(), 0
    headers = {"Authorization": f"Bearer {ctx.tokens['member']}"}
    try:
        with httpx.stream(
            "GET", f"{service.base_url}/team", headers=headers, timeout=3600
        ) as response:
            status = response.status_code
            for chunk in response.iter_raw():
                size += len(chunk)
    finally:
        done.set()
        sampler.join()
    growth = max(peak[w] - before.get(w, peak[w]) for w in peak)
    return {
        "teams": teams,
        "status": status,
        "body_mib": round(size / 2**20, 1),
        "seconds": round(time.monotonic() - started, 2),
        "peak_growth_mib": round(growth / 1024, 1),
    }


def _csv_batch(first: int, count: int) -> bytes:
    lines = ["team,email,givenName,tags"]
    for team in range(first, first + count):
        lines += [
            f"Import {team:07d},i{team}.{m}@example.org,Person,cohort" for m in range(MEMBERS)
        ]
    return ("\r\n".join(lines) + "\r\n").encode()


async def _import(base_url: str, token: str, teams: int) -> dict[str, Any]:
    firsts = list(range(0, teams, BATCH))
    bodies = [_csv_batch(first, min(BATCH, teams - first)) for first in firsts]
    created, refused, queue = 0, 0, list(range(len(bodies)))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "text/csv"}

    async def client() -> None:
        nonlocal created, refused
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=600) as http:
            while queue:
                answer = await http.post("/team/bulk", content=bodies[queue.pop()])
                if answer.status_code == 201:
                    created += len(answer.json())
                else:
                    refused += 1

    started = time.monotonic()
    await asyncio.gather(*(client() for _ in range(CLIENTS)))
    seconds = time.monotonic() - started
    return {
        "teams": teams,
        "members_a_team": MEMBERS,
        "created": created,
        "batches_refused": refused,
        "seconds": round(seconds, 1),
        "teams_per_second": round(created / seconds) if seconds else None,
    }


def bulk_import(ctx: Context, teams: int) -> dict[str, Any]:
    """``teams`` teams imported into a new organization of the running service."""
    settings = Settings(_env_file=None, data_dir=ctx.workdir, jwt_secret=JWT_SECRET)
    token = TokenService(settings).mint(
        role=Role.ADMIN, org_id=uuid.uuid4(), subject="bench-import", lifetime=dt.timedelta(hours=6)
    )
    return asyncio.run(_import(ctx.service.base_url, token, teams))


def measure(backend: str, args: argparse.Namespace, wrk: str) -> dict[str, Any]:
    """The reads at both sizes (``args.huge_sizes``), the whole list at each, the import
    (``args.huge_import`` teams) beside the larger."""
    sizes: list[int] = args.huge_sizes
    imported: int = args.huge_import

    def probe(ctx: Context, teams: int) -> dict[str, Any]:
        found: dict[str, Any] = {"whole_list": whole_list(ctx, teams)}
        print(f"  whole list: {found['whole_list']}", flush=True)
        if backend == "postgresql" and teams == sizes[-1]:
            found["bulk_import"] = bulk_import(ctx, imported)
            print(f"  bulk import: {found['bulk_import']}", flush=True)
        return found

    options = argparse.Namespace(
        sizes=sizes,
        only="GET ",  # the read rows (and the bare endpoint, for the drift)
        duration=args.duration,
        warmup=args.warmup,
        threads=1,
        connections=16,
        compare_workers=False,
        keep=args.keep,
        quick=False,
    )
    result = bench_run.run_backend(backend, options, wrk, probe=probe)  # make bench's way
    runs = sorted(result["runs"], key=lambda run: run["teams"])
    p50 = {run["teams"]: {row["name"]: row.get("p50_ms") for row in run["rows"]} for run in runs}
    return {
        "sizes": sizes,
        "p50_ms": {str(k): v for k, v in p50.items()},
        "slopes": {n: v for n, v in result["slopes"].items() if n in READ_ROWS},
        "bare_drift": result.get("bare_drift"),
        "whole_list": [run["probe"]["whole_list"] for run in runs if "probe" in run],
        "bulk_import": next(
            (run["probe"]["bulk_import"] for run in runs if "bulk_import" in run.get("probe", {})),
            None,
        ),
        "load": [round(run["rows"][0].get("loadavg", 0), 2) for run in runs if run["rows"]],
    }


def goals(huge: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    small, large = huge["sizes"]
    drift = huge.get("bare_drift")
    for name, value in huge["slopes"].items():
        adjusted = f" (÷ drift {value / drift:.2f})" if drift else ""
        out.append(
            {
                "goal": f"one organization, {name}: p50 slope {small:,} → {large:,} teams ≤ "
                f"{SLOPE_LIMIT:g}",
                "value": f"{value}{adjusted}",
                "met": value <= SLOPE_LIMIT,
            }
        )
    lists = huge.get("whole_list", [])
    if len(lists) == 2:
        first, last = lists
        grew = last["peak_growth_mib"] - first["peak_growth_mib"]
        body = last["body_mib"] - first["body_mib"]
        out.append(
            {
                "goal": "GET /team of every team streamed: worker memory does not follow the "
                "body (growth from the smaller to the larger ≤ 10 % of the body's)",
                "value": f"body {first['body_mib']} → {last['body_mib']} MiB, peak growth "
                f"{first['peak_growth_mib']} → {last['peak_growth_mib']} MiB",
                "met": last["status"] == 200 and grew <= 0.1 * body,
            }
        )
    imported = huge.get("bulk_import")
    if imported:
        out.append(
            {
                "goal": f"bulk import of {imported['teams']:,} teams ≥ {IMPORT_GOAL:,} teams/s",
                "value": imported["teams_per_second"],
                "met": imported["created"] == imported["teams"]
                and (imported["teams_per_second"] or 0) >= IMPORT_GOAL,
            }
        )
    return out

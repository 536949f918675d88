"""The scale-out row: reads/s with 1, 2 and 3 Questline processes, and with the replica.

``make bench-scale`` (``.venv/bin/python -m bench.scaleout [--quick]``) starts the
topology of docs/deploy.md from local binaries (tests/support/topology.py): a primary,
a streaming hot-standby replica, pgbouncer in transaction pooling mode, and
``questline serve`` processes (one worker each) on their own ports. It seeds the
benchmark's dataset (bench/dataset/) into the primary, waits for the replica to
replay it, then drives each configuration with one wrk per process at once (the same
total connections, split evenly: what a round-robin balancer does) and adds up the
requests. Rate limits are off, as in ``make bench``.

Everything runs on this one machine: its cores are shared by wrk, every Questline
process, pgbouncer, the primary and the replica, so the figures show what the
processes cost and whether the topology holds up, not what separate hosts would gain.
Results go to bench/results/<date>-scaleout[-quick].json.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from tests.support.live import LiveServer
from tests.support.topology import DATABASE, Cluster

from bench.dataset.seed import Seeded, seed, seeding_engine
from bench.harness.loadgen import LoadSettings, Measured, ensure_wrk, run_wrk, wrk_version
from bench.harness.report import RESULTS_DIR, ROOT
from questline.web.identity import Role


@dataclass(frozen=True)
class Config:
    name: str
    processes: int
    replica: bool
    pooler: bool = True


CONFIGS = [
    Config("1 process, primary direct (no pgbouncer)", 1, False, pooler=False),
    Config("1 process, primary", 1, False),
    Config("2 processes, primary", 2, False),
    Config("3 processes, primary", 3, False),
    Config("1 process + replica", 1, True),
    Config("3 processes + replica", 3, True),
]

ENDPOINTS = [
    ("GET /leaderboard?limit=50", "/leaderboard?limit=50", False),
    ("GET /team/{id}", "/team/{id}", True),
]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 teams, 3 s a measurement")
    parser.add_argument("--teams", type=int, default=None, help="default 10,000 (quick 1,000)")
    parser.add_argument("--duration", type=float, default=None, help="seconds measured")
    parser.add_argument("--connections", type=int, default=24, help="wrk connections in all")
    return parser.parse_args(argv)


def _wait_replayed(cluster: Cluster, seconds: float = 300) -> None:
    async def lag() -> int:
        assert cluster.primary is not None
        assert cluster.standby is not None
        primary = await asyncpg.connect(
            host="127.0.0.1", port=cluster.primary.port, user="questline", database=DATABASE
        )
        standby = await asyncpg.connect(
            host="127.0.0.1", port=cluster.standby.port, user="questline", database=DATABASE
        )
        try:
            written = await primary.fetchval("SELECT pg_current_wal_lsn()::text")
            return int(
                await standby.fetchval(
                    "SELECT pg_wal_lsn_diff($1::text::pg_lsn, pg_last_wal_replay_lsn())", written
                )
            )
        finally:
            await primary.close()
            await standby.close()

    deadline = time.monotonic() + seconds
    while asyncio.run(lag()) > 0:
        if time.monotonic() > deadline:
            raise TimeoutError("the replica did not replay the dataset")
        time.sleep(0.5)


def _measure(
    wrk: str,
    servers: list[LiveServer],
    *,
    path: str,
    ids_file: Path | None,
    token: str,
    connections: int,
    seconds: float,
) -> Measured:
    """One wrk per process, all at once; their requests added up."""
    per = max(1, connections // len(servers))
    load = LoadSettings(threads=1, connections=per, duration_s=seconds, warmup_s=0)
    env = {"BENCH_PATH": path, "BENCH_TOKEN": token, "BENCH_IDS": str(ids_file or "")}

    def one(server: LiveServer, duration: float) -> Measured:
        return run_wrk(
            wrk, base_url=server.url, script="get.lua", env=env, load=load, seconds=duration
        )

    with ThreadPoolExecutor(max_workers=len(servers)) as pool:
        list(pool.map(lambda s: one(s, 2), servers))  # warm-up
        results = list(pool.map(lambda s: one(s, seconds), servers))
    errors: dict[str, int] = {}
    for result in results:
        for key, value in result.errors.items():
            errors[key] = errors.get(key, 0) + value
    total = sum(r.requests for r in results)
    return Measured(
        requests=total,
        seconds=max(r.seconds for r in results),
        errors=errors,
        p50_ms=max(r.p50_ms for r in results),
        p90_ms=max(r.p90_ms for r in results),
        p99_ms=max(r.p99_ms for r in results),
        mean_ms=sum(r.mean_ms * r.requests for r in results) / max(1, total),
        statuses={},
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    wrk = ensure_wrk()
    teams = args.teams or (1_000 if args.quick else 10_000)
    seconds = args.duration or (3.0 if args.quick else 8.0)
    workdir = Path(tempfile.mkdtemp(prefix="questline-bench-scale-"))
    cluster = Cluster(root=workdir).start()
    servers: list[LiveServer] = []
    try:
        engine = seeding_engine(cluster.direct_url)
        seeded: Seeded = asyncio.run(_seed(engine, teams))
        _wait_replayed(cluster)
        print(f"scale-out: seeded {teams:,} teams; the replica has replayed them", flush=True)
        token = cluster.tokens.mint(
            role=Role.MEMBER,
            org_id=seeded.org_id,
            subject="bench-scale",
            lifetime=dt.timedelta(hours=6),
        )
        ids_file = workdir / "team-ids.txt"
        ids_file.write_text("\n".join(str(t) for t in seeded.team_ids) + "\n")
        rows: list[dict[str, Any]] = []
        for config in CONFIGS:
            for server in servers:
                server.stop()
            servers = []
            env = {
                **cluster.env(),
                "QUESTLINE_RATE_LIMIT_ENABLED": "false",
                "QUESTLINE_LOG_LEVEL": "WARNING",
                "QUESTLINE_DATABASE_POOL_SIZE": "10",
            }
            if not config.replica:
                env.pop("QUESTLINE_DATABASE_REPLICA_URLS")
            if not config.pooler:
                env["QUESTLINE_DATABASE_URL"] = cluster.direct_url
                env["QUESTLINE_DATABASE_TRANSACTION_POOLER"] = "false"
            for index in range(config.processes):
                log = workdir / f"serve-{config.processes}-{int(config.replica)}-{index}.log"
                servers.append(LiveServer(env=env, log_path=log).start())
            for name, path, with_ids in ENDPOINTS:
                measured = _measure(
                    wrk,
                    servers,
                    path=path,
                    ids_file=ids_file if with_ids else None,
                    token=token,
                    connections=args.connections,
                    seconds=seconds,
                )
                row = {
                    "config": config.name,
                    "processes": config.processes,
                    "replica": config.replica,
                    "pgbouncer": config.pooler,
                    "endpoint": name,
                    "rps": round(measured.rps, 1),
                    "p50_ms": round(measured.p50_ms, 1),
                    "p99_ms": round(measured.p99_ms, 1),
                    "errors": measured.error_count,
                }
                rows.append(row)
                print(
                    f"  {config.name:42} {name:28} {row['rps']:8.1f} req/s  "
                    f"p50 {row['p50_ms']:6.1f} ms  p99 {row['p99_ms']:7.1f} ms  "
                    f"errors {row['errors']}",
                    flush=True,
                )
            share = _read_targets(servers, cluster.operator_token())
            for done in rows:
                if done["config"] == config.name:
                    done["reads_on_replica"] = share
    finally:
        for server in servers:
            server.stop()
        cluster.close()
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "teams": teams,
        "seconds_per_measurement": seconds,
        "connections": args.connections,
        "cpus": os.cpu_count(),
        "wrk": wrk_version(wrk),
        "rows": rows,
    }


def _read_targets(servers: list[LiveServer], operator_token: str) -> float | None:
    """The share of this configuration's reads that ran on the replica (from /metrics,
    which answers an operator's token only)."""
    totals = {"primary": 0.0, "replica": 0.0}
    scraper = {"Authorization": f"Bearer {operator_token}"}
    for server in servers:
        text = httpx.get(f"{server.url}/metrics", headers=scraper, timeout=10).text
        for target in totals:
            found = re.search(
                rf'^questline_database_reads_total\{{target="{target}"\}} (\S+)$', text, re.M
            )
            totals[target] += float(found.group(1)) if found else 0.0
    reads = totals["primary"] + totals["replica"]
    return round(totals["replica"] / reads, 3) if reads else None


async def _seed(engine: Any, teams: int) -> Seeded:
    try:
        return await seed(engine, teams)
    finally:
        await engine.dispose()


def markdown(result: dict[str, Any]) -> str:
    configs = list(dict.fromkeys(r["config"] for r in result["rows"]))
    endpoints = list(dict.fromkeys(r["endpoint"] for r in result["rows"]))
    lines = [
        "| Configuration | "
        + " | ".join(f"`{e}` req/s" for e in endpoints)
        + " | reads on the replica |",
        "|---|" + "---:|" * (len(endpoints) + 1),
    ]
    for config in configs:
        cells = []
        share = next(r for r in result["rows"] if r["config"] == config).get("reads_on_replica")
        for endpoint in endpoints:
            row = next(
                r for r in result["rows"] if r["config"] == config and r["endpoint"] == endpoint
            )
            cells.append(f"{row['rps']:,.0f}")
        on_replica = "-" if share is None else f"{share:.0%}"
        lines.append(f"| {config} | " + " | ".join(cells) + f" | {on_replica} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    result = run(args)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if args.quick else ""
    path = RESULTS_DIR / f"{result['date'][:10]}-scaleout{suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\n{result['teams']:,} teams, {result['cpus']} CPUs shared by everything:\n")
    print(markdown(result))
    print(f"\nscale-out: results in {path.relative_to(ROOT)}")
    return 0 if all(r["errors"] == 0 for r in result["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

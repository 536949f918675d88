"""uvicorn against granian, on the same data, in the same minutes (docs/deploy.md §server).

Seeds one database, then for a few rounds starts the service under each server in turn
(the order alternates between rounds, so drift in the shared machine's load falls on
both) and measures the same rows with the same wrk settings as ``make bench``. Prints a
table of requests/s per server and round, the median of the rounds, and granian ÷
uvicorn; writes the figures to bench/results/<date>-servers-<backend>.json.

    .venv/bin/python -m bench.probes.servers --backend sqlite
    .venv/bin/python -m bench.probes.servers --backend postgresql --rounds 3 --duration 5
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests.support.postgres import PostgresServer, free_port

from bench.harness.loadgen import SERVERS, LoadSettings, Service, ensure_wrk
from bench.harness.measure import Context, RowResult, measure_all
from bench.harness.report import RESULTS_DIR, ROOT
from bench.harness.rows import ROWS, Row
from bench.harness.service import (
    POSTGRES_SETTINGS,
    WORKERS,
    seed_database,
    service_env,
    settings_for,
    tokens_for,
)
from questline.storage.migrate import upgrade

COMPARED = (
    "GET /team/{id}",
    "GET /leaderboard?limit=50",
    "GET /leaderboard/graph?top=10",
    "POST /team/{id}/progress + DELETE …/{taskId}",
)
"""A miss-heavy read, two cached reads and the write row; the bare endpoint comes with
every run."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--teams", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=4.0, help="seconds measured a row")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--connections", type=int, default=16)
    return parser.parse_args(argv)


def _rows() -> list[Row]:
    return [row for row in ROWS if row.name in COMPARED]


def _one_run(
    server: str,
    *,
    backend: str,
    url: str | None,
    data_dir: Path,
    teams: int,
    ctx_args: dict[str, Any],
) -> list[RowResult]:
    env = service_env(data_dir, url)
    workdir: Path = ctx_args["workdir"]
    with Service(
        env=env, workers=WORKERS[backend], port=free_port(), workdir=workdir, server=server
    ) as service:
        print(f"{backend}, {server}:", flush=True)
        ctx = Context(service, **ctx_args)
        return measure_all(ctx, _rows(), teams)


def _table(figures: dict[str, dict[str, list[float]]]) -> str:
    lines = ["| row | uvicorn req/s (median) | granian req/s (median) | granian ÷ uvicorn |"]
    lines.append("|---|---:|---:|---:|")
    for name, by_server in figures.items():
        uv, gr = (statistics.median(by_server.get(s) or [0.0]) for s in SERVERS)
        ratio = f"{gr / uv:.2f}" if uv else "-"
        lines.append(f"| `{name}` | {uv:,.0f} | {gr:,.0f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    wrk = ensure_wrk()
    load = LoadSettings(
        threads=1, connections=args.connections, duration_s=args.duration, warmup_s=args.warmup
    )
    figures: dict[str, dict[str, list[float]]] = {}
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="questline-servers-"))
        stack.callback(shutil.rmtree, workdir, True)
        url = None
        if args.backend == "postgresql":
            pg = PostgresServer(server_settings=POSTGRES_SETTINGS).start()
            stack.callback(pg.cleanup)
            url = pg.create_database("bench_servers")
        data_dir = workdir / "data"
        data_dir.mkdir()
        settings = settings_for(data_dir, url)
        upgrade(settings)
        seeded = asyncio.run(seed_database(settings.resolved_database_url, args.teams))
        tokens = tokens_for(settings, seeded)
        ctx_args = {"seeded": seeded, "tokens": tokens, "workdir": workdir, "wrk": wrk}
        ctx_args["load"] = load
        for round_number in range(args.rounds):
            order = SERVERS if round_number % 2 == 0 else tuple(reversed(SERVERS))
            for server in order:
                results = _one_run(
                    server,
                    backend=args.backend,
                    url=url,
                    data_dir=data_dir,
                    teams=args.teams,
                    ctx_args=ctx_args,
                )
                for result in results:
                    if result.rps is not None and result.status == "ok":
                        by_server = figures.setdefault(result.name, {})
                        by_server.setdefault(server, []).append(result.rps)
    print(_table(figures), flush=True)
    path = RESULTS_DIR / f"{dt.date.today().isoformat()}-servers-{args.backend}.json"
    path.write_text(
        json.dumps(
            {
                "backend": args.backend,
                "teams": args.teams,
                "rounds": args.rounds,
                "workers": WORKERS[args.backend],
                "load": {
                    "connections": load.connections,
                    "duration_s": load.duration_s,
                    "warmup_s": load.warmup_s,
                },
                "loadavg_end": os.getloadavg()[0],
                "requests_per_second": figures,
            },
            indent=2,
        )
    )
    print(f"results: {path.relative_to(ROOT)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

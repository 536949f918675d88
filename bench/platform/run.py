"""``make bench-platform``: Questline over many organizations (issue 30).

For each backend: seed many organizations with Zipf-like sizes (bench/dataset/tenants.py,
set-based, ``COPY`` on PostgreSQL), mint each organization's member and admin token,
measure a read whose entry was evicted (in-process, bench/platform/cold.py), start
``questline serve`` (2 workers on PostgreSQL, 1 on SQLite, rate limits off) and drive it
with wrk: the bare endpoint and the mixed, skewed traffic (bench/harness/lua/platform.lua)
at 16 and 256 connections; then open thousands of leaderboard streams, measure write →
event while the traffic runs again, go past the caps, and read the workers' resident
memory. Results: bench/results/<date>-platform-<backend>[-quick].json and the platform
section of BENCHMARKS.md.

    .venv/bin/python -m bench.platform --quick             # 500 organizations, 50,000 teams
    .venv/bin/python -m bench.platform                     # 10,000 organizations, 1,000,000
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests.support.postgres import PostgresServer, free_port

from bench.dataset import rules
from bench.dataset.rules import Kind
from bench.dataset.seed import seed, seeding_engine
from bench.dataset.sqlgen import ident
from bench.dataset.tenants import Tenants, tenants
from bench.harness.loadgen import Service, ensure_wrk, wrk_version
from bench.harness.report import RESULTS_DIR, ROOT, machine
from bench.harness.service import JWT_SECRET, POSTGRES_SETTINGS, WORKERS, service_env
from bench.platform import cold, holders, huge, memory, report, streams, traffic
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role

QUICK = {"orgs": 500, "teams": 50_000, "streams": 1_000, "duration": 5.0, "warmup": 2.0}
FULL = {"orgs": 10_000, "teams": 1_000_000, "streams": 10_000, "duration": 10.0, "warmup": 3.0}
STREAMS_PER_ORG = 10
"""Streams of one organization per worker (issue 30: 10,000 a worker over 1,000
organizations)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.platform", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="500 organizations, 50,000 teams")
    parser.add_argument(
        "--backend", choices=["sqlite", "postgresql", "both"], default="both", help="default both"
    )
    parser.add_argument("--orgs", type=int, default=None)
    parser.add_argument("--teams", type=int, default=None)
    parser.add_argument("--seed", type=int, default=30, help="the sizes' random seed")
    parser.add_argument("--streams", type=int, default=None, help="open streams a worker")
    parser.add_argument("--duration", type=float, default=None, help="seconds measured a row")
    parser.add_argument("--warmup", type=float, default=None, help="seconds of warm-up a row")
    parser.add_argument(
        "--read-model-mib",
        type=int,
        default=None,
        help="QUESTLINE_READ_MODEL_MAX_BYTES in MiB (default: the service's default)",
    )
    parser.add_argument(
        "--cold-repeats",
        type=int,
        default=400,
        help="requests a cold read phase (default 400: of 100, the p99 is the maximum)",
    )
    parser.add_argument("--writes", type=int, default=20, help="writes timed to their events")
    parser.add_argument(
        "--streams-per-client",
        type=int,
        default=holders.PER_PROCESS,
        help="streams a client process holds (under its open-file limit)",
    )
    parser.add_argument("--skip-streams", action="store_true")
    parser.add_argument(
        "--skip-huge", action="store_true", help="leave out the one huge organization"
    )
    parser.add_argument("--huge-only", action="store_true", help="only the one huge organization")
    parser.add_argument(
        "--huge-sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=None,
        help="the huge organization's two sizes (default 100000,1000000; quick 10000,100000)",
    )
    parser.add_argument(
        "--huge-import", type=int, default=None, help="teams imported (default the larger size)"
    )
    parser.add_argument("--no-markdown", action="store_true", help="leave BENCHMARKS.md alone")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = parser.parse_args(argv)
    preset = QUICK if args.quick else FULL
    args.orgs = args.orgs or preset["orgs"]
    args.teams = args.teams or preset["teams"]
    args.streams = args.streams if args.streams is not None else preset["streams"]
    args.duration = args.duration or preset["duration"]
    args.warmup = args.warmup if args.warmup is not None else preset["warmup"]
    default = args.orgs == preset["orgs"] and args.teams == preset["teams"]
    huge_default = args.huge_sizes is None and args.huge_import is None
    whole = not (args.skip_streams or args.skip_huge or args.huge_only)
    whole = whole and args.streams == preset["streams"]
    # only a run of every stage at the preset's sizes is the one BENCHMARKS.md shows
    complete = default and huge_default and whole
    args.mode = ("quick" if args.quick else "full") if complete else "partial"
    args.huge_sizes = args.huge_sizes or huge.SIZES["quick" if args.quick else "full"]
    args.huge_import = args.huge_import or args.huge_sizes[-1]
    return args


def mint_tokens(settings: Settings, found: Tenants) -> list[tuple[str, str]]:
    """Each organization's (member, admin) token."""
    service = TokenService(settings)
    lifetime = dt.timedelta(hours=6)
    return [
        (
            service.mint(role=Role.MEMBER, org_id=org, subject="bench-member", lifetime=lifetime),
            service.mint(role=Role.ADMIN, org_id=org, subject="bench-admin", lifetime=lifetime),
        )
        for org in found.org_ids
    ]


def _free_task(team: int, turn: int) -> str:
    """A task team ``team`` has not completed (bench/dataset/rules.py: steps 20 … 53)."""
    steps = rules.TASK_COUNT - rules.COMPLETIONS_PER_TEAM
    index = rules.task_index(rules.first_task(team), rules.COMPLETIONS_PER_TEAM + turn % steps)
    return str(ident(Kind.TASK, index))


def stream_plan(
    found: Tenants, tokens: list[tuple[str, str]], per_worker: int, workers: int
) -> tuple[list[tuple[int, str]], list[int]]:
    """(organization, member token) a stream, and the organizations: ``STREAMS_PER_ORG``
    a worker each, the organizations spread evenly over the ranks (hot and cold ones)."""
    wanted = max(1, min(len(found.org_ids), per_worker // STREAMS_PER_ORG))
    step = len(found.org_ids) / wanted
    ranks = sorted({int(i * step) for i in range(wanted)})
    plan = []
    for i in range(per_worker * workers):
        rank = ranks[i % len(ranks)]
        plan.append((rank, tokens[rank][0]))
    return plan, ranks


def _free_task_of(team_id: str, turn: int) -> str:
    """``_free_task`` of a team given by its id (the ordinal is its last 15 hex digits)."""
    return _free_task(int(team_id.replace("-", "")[-15:], 16), turn)


def stream_writes(
    tokens: list[tuple[str, str]], ranks: list[int], count: int
) -> list[streams.Write]:
    return [
        streams.Write(ranks[(i * 7) % len(ranks)], tokens[ranks[(i * 7) % len(ranks)]][1],
                      _free_task_of, i)
        for i in range(count)
    ]  # fmt: skip


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)


class Background:
    """A blocking call in a thread (wrk while the event loop holds the streams)."""

    def __init__(self, call: Any) -> None:
        self.result: Any = None
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()

    def _run(self, call: Any) -> None:
        self.result = call()

    def join(self) -> Any:
        self.thread.join()
        return self.result


async def measure_streams(
    service: Service,
    load: traffic.Load,
    found: Tenants,
    tokens: list[tuple[str, str]],
    args: argparse.Namespace,
    without: dict[str, Any],
) -> tuple[dict[str, Any], dict[int, int], dict[int, int]]:
    assert service.process is not None
    workers = service.workers
    plan, ranks = stream_plan(found, tokens, args.streams, workers)
    before = memory.workers_rss_kib(service.process.pid)
    held = await holders.Holders.open(service.port, plan, args.streams_per_client)
    await asyncio.sleep(1)
    opened = memory.workers_rss_kib(service.process.pid)
    growth = sum(opened.values()) - sum(before.values())
    print(
        f"  streams: {held.opened:,} open in {held.seconds:.1f} s ({held.retried} retried, "
        f"{held.refused} refused; {len(held.holders)} client processes)",
        flush=True,
    )
    # What the open streams cost the workers while nothing happens (no traffic).
    cpu_before, idle_started = sum(memory.cpu_seconds(p) for p in opened), time.monotonic()
    await asyncio.sleep(3)
    idle_cpu = (sum(memory.cpu_seconds(p) for p in opened) - cpu_before) / (
        time.monotonic() - idle_started
    )
    loadavg = round(os.getloadavg()[0], 2)
    background = Background(lambda: traffic.mixed(load, 16, name="mixed, streams open"))
    writes = stream_writes(tokens, ranks, args.writes)
    spacing = max(0.3, (load.duration_s - 1) / max(1, len(writes)))
    done, refused = await streams.post_writes(service.base_url, writes, spacing=spacing)
    latency = streams.write_to_event(await held.arrivals(done), len(done), refused)
    with_streams = background.join()
    extra = [(ranks[i % len(ranks)], tokens[ranks[i % len(ranks)]][0]) for i in range(20)]
    caps = await streams.past_the_caps(service.port, service.base_url, extra)
    await held.close()
    kept = with_streams["rps"] / without["rps"] if without.get("rps") else None
    result = {
        "open": held.opened,
        "per_worker": held.opened // workers,
        "client_processes": len(held.holders),
        "organizations": len(ranks),
        "open_seconds": round(held.seconds, 1),
        "retried_while_opening": held.retried,
        "refused_while_opening": held.refused,
        "kib_per_stream": round(growth / held.opened, 1) if held.opened else None,
        "idle_cpu_cores": round(idle_cpu, 3),
        "write_to_event": latency,
        "with_streams": with_streams,
        "read_ratio_kept": round(kept, 3) if kept else None,
        "past_caps": caps,
        "loadavg": loadavg,
    }
    return result, before, opened


def run_backend(backend: str, args: argparse.Namespace, wrk: str) -> dict[str, Any]:
    started_load = [round(x, 2) for x in os.getloadavg()]
    found = tenants(args.orgs, args.teams, seed=args.seed)
    workers = WORKERS[backend]
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix=f"questline-platform-{backend}-"))
        if args.keep:
            print(f"bench: work directory {workdir}", flush=True)
        else:
            stack.callback(shutil.rmtree, workdir, True)
        url = None
        machine_info = machine(wrk_version(wrk))
        if backend == "postgresql":
            server = PostgresServer(server_settings=POSTGRES_SETTINGS).start()
            stack.callback(server.cleanup)
            url = server.create_database("bench_platform")
            machine_info["postgresql"] = server.version()
        data_dir = workdir / "data"
        data_dir.mkdir()
        settings = Settings(data_dir=data_dir, database_url=url, jwt_secret=JWT_SECRET,
                            database_row_security=False, _env_file=None)  # fmt: skip
        upgrade(settings)
        seeded = asyncio.run(_seed(settings.resolved_database_url, found))
        rows = sum(seeded.rows.values())
        print(
            f"{backend}: seeded {found.teams:,} teams in {len(found.org_ids):,} organizations "
            f"({rows:,} rows) in {seeded.seconds:.1f} s",
            flush=True,
        )
        tokens = mint_tokens(settings, found)
        orgs = traffic.orgs_file(workdir / "orgs.txt", found, tokens)
        largest = max(range(len(found.sizes)), key=lambda r: found.sizes[r])
        cold_rows = asyncio.run(
            cold.measure(
                settings,
                tokens[largest][0],
                found.firsts[largest],
                found.sizes[largest],
                args.cold_repeats,
            )
        )
        for row in cold_rows:
            print(f"  cold {row}", flush=True)
        env = service_env(data_dir, url)
        env["QUESTLINE_STREAM_MAX_PER_PROCESS"] = str(max(1, args.streams))
        env["QUESTLINE_SERVER_MAX_CONNECTIONS"] = str(args.streams + 600)
        if args.read_model_mib:
            env["QUESTLINE_READ_MODEL_MAX_BYTES"] = str(args.read_model_mib * 2**20)
        read_model_max = int(
            env.get("QUESTLINE_READ_MODEL_MAX_BYTES", Settings(_env_file=None).read_model_max_bytes)
        )
        result_traffic: list[dict[str, Any]] = []
        with Service(env=env, workers=workers, port=free_port(), workdir=workdir) as service:
            assert service.process is not None
            pid = service.process.pid
            start_rss = memory.workers_rss_kib(pid)
            load = traffic.Load(wrk, service.base_url, orgs, args.duration, args.warmup)
            for connections in (16, 256):
                bare = traffic.bare(load, connections, tokens[0][0])
                mixed = traffic.mixed(load, connections)
                mixed["of_bare"] = round(mixed["rps"] / bare["rps"], 3) if bare["rps"] else None
                for row in (bare, mixed):
                    print(f"  {row}", flush=True)
                result_traffic += [bare, mixed]
            after_traffic = memory.workers_rss_kib(pid)
            streams_result: dict[str, Any] = {}
            opened: dict[int, int] = {}
            if args.streams and not args.skip_streams:
                without = next(r for r in result_traffic if r["name"] == "mixed")
                streams_result, _, opened = asyncio.run(
                    measure_streams(service, load, found, tokens, args, without)
                )
                with_streams = streams_result.pop("with_streams")
                bare16 = result_traffic[0]["rps"]
                with_streams["of_bare"] = round(with_streams["rps"] / bare16, 3) if bare16 else None
                result_traffic.append(with_streams)
                print(f"  streams {streams_result}", flush=True)
            end_rss = memory.workers_rss_kib(pid)
    open_streams = streams_result.get("per_worker", 0)
    max_growth = max(
        max(after_traffic.get(p, 0), opened.get(p, 0), end_rss.get(p, 0)) - start_rss[p]
        for p in start_rss
    )
    page_caches_kib = memory.sqlite_page_caches_kib() if backend == "sqlite" else 0
    allowed_kib = read_model_max // 1024 + open_streams * report.STREAM_KB_GOAL + page_caches_kib
    mem = {
        "start_mib": [_mib(v) for v in start_rss.values()],
        "after_traffic_mib": [_mib(v) for v in after_traffic.values()],
        "streams_open_mib": [_mib(v) for v in opened.values()] if opened else "-",
        "end_mib": [_mib(v) for v in end_rss.values()],
        "read_model_max_mib": read_model_max // 2**20,
        "max_growth_mib": _mib(max_growth),
        "allowed_growth_mib": _mib(allowed_kib),
        "page_caches_mib": _mib(page_caches_kib),
    }
    result: dict[str, Any] = {
        "kind": report.KIND,
        "date": dt.date.today().isoformat(),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "backend": backend,
        "mode": args.mode,
        "workers": workers,
        "command": " ".join([".venv/bin/python -m bench.platform", *sys.argv[1:]]),
        "machine": machine_info,
        "loadavg_at_start": started_load[0],
        "settings": {
            "read_model_max_bytes": read_model_max,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "streams_per_worker": args.streams,
            "zipf_s": traffic.ZIPF_S,
        },
        "dataset": {
            "organizations": len(found.org_ids),
            "teams": found.teams,
            "largest": max(found.sizes),
            "median": statistics.median(found.sizes),
            "seed": args.seed,
            "rows": sum(seeded.rows.values()),
            "seconds": round(seeded.seconds, 1),
        },
        "traffic": result_traffic,
        "cold": cold_rows,
        "streams": streams_result,
        "memory": mem,
    }
    result["goals"] = report.goals(result)
    return result


def with_huge(
    result: dict[str, Any], backend: str, args: argparse.Namespace, wrk: str
) -> dict[str, Any]:
    """``result`` with the one huge organization's stage (bench/platform/huge.py)."""
    found = huge.measure(backend, args, wrk)
    if not result:  # --huge-only
        result = {
            "kind": report.KIND,
            "backend": backend,
            "mode": "partial",
            "workers": WORKERS[backend],
            "command": " ".join([".venv/bin/python -m bench.platform", *sys.argv[1:]]),
            "goals": [],
        }
    result["date"] = dt.date.today().isoformat()
    result["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    result["huge"] = found
    result["goals"] = report.goals(result)
    return result


async def _seed(url: str, found: Tenants) -> Any:
    engine = seeding_engine(url)
    try:
        return await seed(engine, found.teams, tenants=found, pairs=10)
    finally:
        await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args = parse_args(sys.argv[1:] if argv is None else argv)
    streams.more_files()  # the workers' sockets (the client's: bench/platform/holders.py)
    wrk = ensure_wrk()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    for backend in backends:
        started = time.monotonic()
        result = {} if args.huge_only else run_backend(backend, args, wrk)
        if result and not args.skip_huge:  # kept if the huge stage fails
            report.save({**result, "mode": "partial"}, RESULTS_DIR, stage="before-huge")
        if not args.skip_huge:
            print(f"{backend}: one huge organization", flush=True)
            result = with_huge(result, backend, args, wrk)
        path = report.save(result, RESULTS_DIR)
        print(report.text(result), flush=True)
        print(f"results: {path.relative_to(ROOT)} ({time.monotonic() - started:.0f} s)")
    if not args.no_markdown and args.mode != "partial":
        report.write_markdown(ROOT / "BENCHMARKS.md", RESULTS_DIR)
        print("BENCHMARKS.md updated", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

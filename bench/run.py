"""How fast Questline is: ``make bench`` (full) and ``make bench-quick``.

For each backend (SQLite, PostgreSQL) and each dataset size, the runner seeds a fresh
database (bench/dataset/), starts ``questline serve`` as users run it, drives it
over loopback with wrk (bench/harness/lua/) for a bounded time per endpoint (bench/harness/rows.py),
and prints a table. Then it times the command line's start (bench/harness/cli_startup.py:
``questline --version``, ``token create`` and ``signin-link`` beside ``python -c pass``).
Results go to bench/results/<date>-<backend>[-quick].json and <date>-cli[-quick].json,
and the latest figures into BENCHMARKS.md. ``--only "command line"`` runs that row alone;
``--only "season=|tag=|perMember"`` the rows whose names contain any of the three;
``--only "attempts|hints"`` the learners' writes (with the progress write they are
compared with).

Run with the project's virtualenv: ``.venv/bin/python -m bench.run [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests.support.postgres import (
    PostgresServer,
    as_role,
    create_row_security_database,
    free_port,
)

from bench.harness import cli_startup, markdown, report, statements
from bench.harness.loadgen import LoadSettings, Service, ensure_wrk, wrk_version
from bench.harness.measure import Context, measure_all
from bench.harness.report import RESULTS_DIR, ROOT
from bench.harness.rows import PROGRESS_WRITE, ROWS, Row
from bench.harness.service import (
    POSTGRES_SETTINGS,
    WORKERS,
    seed_database,
    service_env,
    settings_for,
    tokens_for,
)
from questline.storage.migrate import upgrade

COMPARE_WORKERS_AT = 10_000
FULL_SIZES = [1_000, 10_000, 100_000]

Probe = Callable[[Context, int], dict[str, Any]]
"""A measurement of its own on a size's running service (its context, the size)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="1,000 teams, a few seconds a row")
    parser.add_argument(
        "--backend", choices=["sqlite", "postgresql", "both"], default="both", help="default both"
    )
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None)
    parser.add_argument("--duration", type=float, default=None, help="seconds measured a row")
    parser.add_argument("--warmup", type=float, default=None, help="seconds of warm-up a row")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (default 1)")
    parser.add_argument("--connections", type=int, default=16, help="wrk connections")
    parser.add_argument(
        "--only",
        default="",
        help="run only rows whose name contains this (several: separated by '|')",
    )
    parser.add_argument(
        "--cli-runs",
        type=int,
        default=None,
        help=f"runs of each command for the {cli_startup.NAME!r} row (default 21, quick 7)",
    )
    parser.add_argument(
        "--compare-workers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"PostgreSQL: also measure 1 worker at {COMPARE_WORKERS_AT:,} teams (full default)",
    )
    parser.add_argument(
        "--row-security",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="PostgreSQL: the service connects as a role under row-level security, as "
        "it does by default (--no-row-security: as the one role that owns the tables)",
    )
    parser.add_argument("--no-markdown", action="store_true", help="leave BENCHMARKS.md alone")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = parser.parse_args(argv)
    args.sizes = args.sizes or ([1_000] if args.quick else FULL_SIZES)
    args.duration = args.duration or (3.0 if args.quick else 8.0)
    args.warmup = args.warmup if args.warmup is not None else (1.0 if args.quick else 2.0)
    args.cli_runs = args.cli_runs or (7 if args.quick else 21)
    if args.compare_workers is None:
        args.compare_workers = not args.quick and COMPARE_WORKERS_AT in args.sizes
    return args


def chosen(only: str, name: str) -> bool:
    """Whether ``--only`` selects the row ``name``: it contains one of the ``|``-separated
    parts (ignoring case); an empty ``--only`` selects every row."""
    parts = [part.strip().lower() for part in only.split("|") if part.strip()] or [""]
    return any(part in name.lower() for part in parts)


def run_size(
    *,
    backend: str,
    teams: int,
    url: str | None,
    workdir: Path,
    rows: list[Row],
    owner_url: str | None = None,
    load: LoadSettings,
    wrk: str,
    workers: list[int],
    probe: Probe | None = None,
) -> list[dict[str, Any]]:
    """The rows at ``teams`` teams; then ``probe`` (bench/platform/huge.py), if any, on the
    same service, its result kept in the run as ``probe``."""
    data_dir = workdir / f"data-{backend}-{teams}"
    data_dir.mkdir(parents=True, exist_ok=True)
    settings = settings_for(data_dir, url, owner_url=owner_url)
    upgrade(settings)
    # Seeding switches triggers off (a superuser's setting): under row security it runs
    # as the server's superuser, on the same database.
    seed_url = settings.resolved_database_url
    if owner_url is not None:
        seed_url = as_role(owner_url, PostgresServer.user)
    seeded = asyncio.run(seed_database(seed_url, teams))
    history = "with" if seeded.history_seeded else "WITHOUT (no progress tables yet)"
    print(
        f"{backend}: seeded {teams:,} teams in {seeded.seconds:.1f} s, {history} history "
        f"({sum(seeded.rows.values()):,} rows)",
        flush=True,
    )
    tokens = tokens_for(settings, seeded)
    at_size = [row for row in rows if row.only_at in (None, teams)]
    counted = asyncio.run(statements.count(settings, tokens, seeded, at_size))
    runs = []
    for count in workers:
        env = service_env(data_dir, url, owner_url=owner_url)
        with Service(env=env, workers=count, port=free_port(), workdir=workdir) as service:
            print(f"{backend}, {teams:,} teams, {count} worker(s):", flush=True)
            ctx = Context(service, seeded, tokens, workdir, wrk, load)
            results = measure_all(ctx, rows if count == workers[0] else _reads(rows), teams)
            for result in results:
                result.statements = counted.get(result.name, "")
            probed = probe(ctx, teams) if probe and count == workers[0] else None
        runs.append(
            {
                "teams": teams,
                "workers": count,
                "seed_seconds": round(seeded.seconds, 1),
                "seed_rows": seeded.rows,
                "history_seeded": seeded.history_seeded,
                "rows": [r.as_json() for r in results],
                **({"probe": probed} if probed is not None else {}),
            }
        )
    return runs


def _reads(rows: list[Row]) -> list[Row]:
    return [r for r in rows if not r.writes]


def _mode(args: argparse.Namespace) -> str:
    """full and quick as documented; anything narrower is partial (kept apart)."""
    if args.only:
        return "partial"
    if args.quick:
        return "quick"
    return "full" if args.sizes == FULL_SIZES else "partial"


def run_backend(
    backend: str, args: argparse.Namespace, wrk: str, probe: Probe | None = None
) -> dict[str, Any]:
    load = LoadSettings(
        threads=args.threads,
        connections=args.connections,
        duration_s=args.duration,
        warmup_s=args.warmup,
    )
    rows = [r for r in ROWS if chosen(args.only, r.name)]
    if any(r.learner for r in rows) and all(r.name != PROGRESS_WRITE for r in rows):
        # the learners' writes are measured against the progress write of the same run
        rows = [r for r in ROWS if r.name == PROGRESS_WRITE or r in rows]
    runs: list[dict[str, Any]] = []
    machine = report.machine(wrk_version(wrk))
    with ExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix=f"questline-bench-{backend}-"))
        if args.keep:
            print(f"bench: work directory {workdir}", flush=True)
        else:
            stack.callback(shutil.rmtree, workdir, True)
        server: PostgresServer | None = None
        if backend == "postgresql":
            server = PostgresServer(server_settings=POSTGRES_SETTINGS).start()
            stack.callback(server.cleanup)
            machine["postgresql"] = server.version()
        for teams in args.sizes:
            owner_url = None
            if server and args.row_security:
                owner_url, url = create_row_security_database(server)
            else:
                url = server.create_database(f"bench_{teams}") if server else None
            workers = [WORKERS[backend]]
            if backend == "postgresql" and args.compare_workers and teams == COMPARE_WORKERS_AT:
                workers.append(1)
            runs += run_size(
                backend=backend,
                teams=teams,
                url=url,
                owner_url=owner_url,
                workdir=workdir,
                rows=rows,
                load=load,
                wrk=wrk,
                workers=workers,
                probe=probe,
            )
            if server:
                server.drop_database((url or "").rsplit("/", 1)[-1])
            shutil.rmtree(workdir / f"data-{backend}-{teams}", ignore_errors=True)
    return report.build(
        backend=backend,
        mode=_mode(args),
        command=report.command(sys.argv),
        machine=machine,
        load=load,
        workers=WORKERS[backend],
        runs=runs,
    )


def _stop_cleanly() -> None:
    """SIGTERM, and SIGINT even when started in the background (where the shell makes
    it ignored), unwind the stack: servers stop and temporary directories go."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def main(argv: list[str] | None = None) -> int:
    _stop_cleanly()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    if not any(chosen(args.only, row.name) for row in ROWS):
        backends = []  # --only names no endpoint: no server to start
    wrk = ensure_wrk() if backends else ""
    written = []
    for backend in backends:
        result = run_backend(backend, args, wrk)
        path = report.save(result, RESULTS_DIR)
        written.append(path)
        print(report.text_table(result), flush=True)
        print(f"results: {path.relative_to(ROOT)}", flush=True)
    if chosen(args.only, cli_startup.NAME):
        print(f"{cli_startup.NAME}: {args.cli_runs} runs of each command", flush=True)
        measured = cli_startup.measure(args.cli_runs)
        # the row is whole whatever --only left out of the endpoints: full or quick
        mode = "quick" if args.quick else "full"
        result = cli_startup.build(measured, mode=mode, command=report.command(sys.argv))
        path = cli_startup.save(result, RESULTS_DIR)
        print(cli_startup.text_table(result), flush=True)
        print(f"results: {path.relative_to(ROOT)}", flush=True)
    if not args.no_markdown and not args.only:
        markdown.write_markdown(ROOT / "BENCHMARKS.md", RESULTS_DIR)
        print("BENCHMARKS.md updated", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

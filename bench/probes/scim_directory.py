"""A directory's SCIM sequence against a served instance: requests per second per phase.

    .venv/bin/python -m bench.probes.scim_directory [--users 1000] [--groups 100]
        [--moves 100] [--deactivate 50] [--backends sqlite,postgresql] [--workers 1]

For each backend: migrate a fresh database (SQLite in a temporary data directory, or a
throwaway PostgreSQL started from the local binaries, as the tests do), start
``questline serve`` on a loopback port (rate limits off, one worker unless told), mint
the organization's ``scim`` token, and send the sequence that
tests/scim/test_directory_sequence.py checks (``tests.scim.support.directory_sequence``):
one POST per user, one POST per group with its members listed, each move a PATCH remove
(``members[value eq "…"]``) plus a PATCH add, each deactivation a PATCH of ``active``.
Requests go one at a time over HTTP, as directories send them, so a figure is the
service's whole cost per request (HTTP, token, SCIM parsing, the members' and teams'
rules, outbox events, the audit entry, commit) plus loopback. The end state is checked
(users, deactivated users, groups, members in teams) before the figures are printed.

Prints one row per backend (requests/s and seconds per phase) and the machine's load
average before and after (the machine may be shared: say so beside the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx
from tests.scim.conftest import issue_token_sync
from tests.scim.support import Directory, SyncRun, directory_sequence
from tests.support.live import LiveServer
from tests.support.postgres import PostgresServer

from questline.config import Settings
from questline.storage.migrate import upgrade

PHASES = ("users", "groups", "moves", "deactivations")
JWT_SECRET = "questline-benchmark-secret-not-for-production-use-0123456789"


def env_for(data_dir: Path, url: str | None) -> dict[str, str]:
    env = {
        "QUESTLINE_DATA_DIR": str(data_dir),
        "QUESTLINE_JWT_SECRET": JWT_SECRET,
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_PUBLIC_URL": "https://questline.bench",
    }
    if url:
        env["QUESTLINE_DATABASE_URL"] = url
        env["QUESTLINE_DATABASE_ROW_SECURITY"] = "false"  # the database's owner: one role
    return env


async def total(directory: Directory, path: str, filter: str) -> int:
    response = await directory.client.get(
        f"/scim/v2{path}", params={"filter": filter, "count": 0}, headers=directory.headers
    )
    response.raise_for_status()
    return int(response.json()["totalResults"])


async def check_end_state(directory: Directory, run: SyncRun, args: argparse.Namespace) -> None:
    """What the sequence must have left: every user, the deactivated ones, every group,
    and no deactivated user in a group."""
    assert await total(directory, "/Users", 'userName sw "p"') == args.users
    assert await total(directory, "/Users", "active eq false") == args.deactivate
    assert await total(directory, "/Groups", 'displayName sw "group"') == args.groups
    for user in run.users[len(run.users) - args.deactivate :][::10]:
        assert await total(directory, "/Groups", f'members[value eq "{user}"]') == 0


async def measure(server: LiveServer, token: str, args: argparse.Namespace) -> SyncRun:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        directory = Directory(client=client, org_id=uuid.UUID(int=0), token=token)
        run = await directory_sequence(
            directory,
            users=args.users,
            groups=args.groups,
            moves=args.moves,
            deactivate=args.deactivate,
        )
        await check_end_state(directory, run, args)
        return run


def run_backend(backend: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    postgres: PostgresServer | None = None
    server: LiveServer | None = None
    try:
        url = None
        if backend == "postgresql":
            postgres = PostgresServer().start()
            url = postgres.create_database("bench_scim")
        data_dir = workdir / backend
        data_dir.mkdir()
        settings = Settings(
            data_dir=data_dir,
            database_url=url,
            database_row_security=False,
            jwt_secret=JWT_SECRET,
            _env_file=None,  # type: ignore[call-arg]
        )
        upgrade(settings)
        org_id = uuid.uuid4()
        token = issue_token_sync(settings, org_id)
        server = LiveServer(
            env=env_for(data_dir, url), log_path=workdir / f"{backend}.log", workers=args.workers
        ).start()
        load_before = os.getloadavg()
        run = asyncio.run(measure(server, token, args))
        load_after = os.getloadavg()
        return {
            "backend": backend,
            "per_second": {p: round(run.requests[p] / run.seconds[p], 1) for p in PHASES},
            "seconds": {p: round(run.seconds[p], 2) for p in PHASES},
            "requests": dict(run.requests),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after],
        }
    finally:
        if server is not None:
            server.stop()
        if postgres is not None:
            postgres.cleanup()


def row(result: dict[str, Any]) -> str:
    cells = [f"{result['per_second'][p]:>7.0f}/s ({result['seconds'][p]:5.1f} s)" for p in PHASES]
    load = " → ".join(f"{a[0]:.2f}" for a in (result["load_before"], result["load_after"]))
    return f"{result['backend']:<11}" + "".join(f"{c:>21}" for c in cells) + f"   load {load}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--deactivate", type=int, default=50)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = parser.parse_args(argv)
    if args.groups < 1 or args.users < args.groups or args.deactivate > args.users:
        parser.error("need 1 ≤ groups ≤ users and deactivate ≤ users")
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    print(
        f"{args.users} users, {args.groups} groups of {args.users // args.groups}, "
        f"{args.moves} moves (2 PATCHes each), {args.deactivate} deactivations; one request "
        f"at a time over HTTP to `questline serve` ({args.workers} worker(s)); "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores"
    )
    print(f"{'backend':<11}" + "".join(f"{p:>21}" for p in PHASES) + "   load (1 min)")
    workdir = Path(tempfile.mkdtemp(prefix="questline-bench-scim-"))
    results = []
    try:
        for backend in backends:
            result = run_backend(backend, args, workdir)
            results.append(result)
            print(row(result), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

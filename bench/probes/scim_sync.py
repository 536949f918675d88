"""A directory's SCIM sync, timed: SQLite and PostgreSQL, through the whole ASGI stack.

    .venv/bin/python -m bench.probes.scim_sync [--users 1000] [--groups 100] [--moves 100]
                                               [--deactivate 50] [--backends sqlite,postgresql]

The sequence is the one tests/scim/test_directory_sequence.py checks
(``tests.scim.support.directory_sequence``): one POST per user, one POST per group with
its members listed, a member moved between two groups as a PATCH remove (``members[value
eq "…"]``) plus a PATCH add, and users deactivated by PATCH. Requests are sent one at a
time, as directories do, in-process (httpx ASGITransport: token check, SCIM parsing,
members' and teams' rules, outbox events, read-model version, commit), so the figures are
the service's own cost per request, without a network. PostgreSQL is a throwaway server
started from the local binaries, as the tests do. Prints requests per second per phase.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

import httpx
from tests.scim.conftest import issue_token
from tests.scim.support import Directory, SyncRun, directory_sequence
from tests.support.postgres import PostgresServer

from questline.app import create_app
from questline.config import Settings
from questline.storage.migrate import upgrade

PHASES = ("users", "groups", "moves", "deactivations")


async def measure(settings: Settings, args: argparse.Namespace) -> SyncRun:
    app = create_app(settings)
    org_id = uuid.uuid4()
    token = (await issue_token(app.state.questline.db, org_id)).token
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            directory = Directory(client=client, org_id=org_id, token=token)
            return await directory_sequence(
                directory,
                users=args.users,
                groups=args.groups,
                moves=args.moves,
                deactivate=args.deactivate,
            )
    finally:
        await app.state.questline.db.dispose()


def report(backend: str, run: SyncRun) -> str:
    cells = [
        f"{run.requests[p] / run.seconds[p]:>8.0f}/s ({run.seconds[p]:5.1f} s)" for p in PHASES
    ]
    return f"{backend:<11}" + "".join(f"{c:>22}" for c in cells)


def run(settings: Settings, backend: str, args: argparse.Namespace) -> str:
    upgrade(settings)  # Alembic runs its own event loop: outside ours
    return report(backend, asyncio.run(measure(settings, args)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--deactivate", type=int, default=50)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    print(
        f"{args.users} users, {args.groups} groups of {args.users // args.groups}, "
        f"{args.moves} moves, {args.deactivate} deactivations; requests one at a time"
    )
    print(f"{'backend':<11}" + "".join(f"{p:>22}" for p in PHASES))
    with tempfile.TemporaryDirectory(prefix="questline-bench-") as tmp:
        base: dict[str, object] = {
            "jwt_secret": "b" * 48,
            "rate_limit_enabled": False,
            "_env_file": None,
        }
        if "sqlite" in backends:
            settings = Settings(data_dir=Path(tmp) / "sqlite", **base)  # type: ignore[arg-type]
            print(run(settings, "sqlite", args), flush=True)
        if "postgresql" in backends:
            server = PostgresServer().start()
            try:
                url = server.create_database("bench")
                settings = Settings(
                    data_dir=Path(tmp) / "pg", database_url=url, database_row_security=False, **base
                )  # type: ignore[arg-type]
                print(run(settings, "postgresql", args), flush=True)
            finally:
                server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

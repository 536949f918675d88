"""Profile one endpoint with pyinstrument, in-process, on a seeded database.

    .venv/bin/python -m bench.probes.profile_endpoint --teams 10000 --backend postgresql \\
        "/leaderboard?limit=50" [--requests 200] [--role member] [--html out.html]

``{team}`` and ``{discipline}`` in the path are replaced by seeded ids; several paths are
profiled one after the other on the same dataset (seeded once). The app runs
in this process (the same code as ``questline serve``), requests go through the whole
ASGI stack with a real token, and the profile covers only the requests (after a few of
warm-up). Where a figure of the benchmark is off, this says where the time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from pyinstrument import Profiler
from sqlalchemy import Engine, event
from tests.support.postgres import PostgresServer

from bench.dataset.seed import seed, seeding_engine
from bench.harness.service import JWT_SECRET, settings_for, tokens_for
from questline.app import create_app
from questline.config import Settings
from questline.storage.migrate import upgrade


async def _profile(args: argparse.Namespace, url: str | None, data_dir: Path) -> str:
    settings = settings_for(data_dir, url)
    engine = seeding_engine(settings.resolved_database_url)
    seeded = await seed(engine, args.teams)
    await engine.dispose()
    tokens = tokens_for(settings, seeded)
    outputs = []
    for asked in args.path:
        path = asked.replace("{team}", str(seeded.team_ids[len(seeded.team_ids) // 2]))
        path = path.replace("{discipline}", str(seeded.discipline_ids[0]))
        outputs.append(await _profile_path(args, settings, tokens, path))
    return "\n".join(outputs)


async def _profile_path(
    args: argparse.Namespace, settings: Settings, tokens: dict[str, str], path: str
) -> str:
    app = create_app(settings)
    statements = count_statements(app.state.questline.db.engine.sync_engine)
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {tokens[args.role]}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://bench", headers=headers
    ) as c:
        for _ in range(5):
            answer = await c.request(args.method, path)
        print(f"{args.method} {path} -> {answer.status_code}, {len(answer.content):,} bytes")
        statements.clear()
        await c.request(args.method, path)
        per_request = len(statements)
        profiler = Profiler(async_mode="enabled")
        started = time.perf_counter()
        profiler.start()
        readmodel = app.state.readmodel
        for _ in range(args.requests):
            if args.miss or args.miss_keep_memos:
                readmodel.cache.drop_bodies()
            if args.miss:
                readmodel.forget_memos()
            await c.request(args.method, path)
        profiler.stop()
        elapsed = time.perf_counter() - started
    await app.state.questline.db.dispose()
    print(f"{per_request} SQL statements a request (as the driver runs them):")
    for statement in statements[:per_request]:
        print(f"  {statement[:170]}")
    print(
        f"{args.requests} requests in {elapsed:.2f} s: {1000 * elapsed / args.requests:.2f} ms each"
    )
    if args.html:
        return profiler.output_html()
    return profiler.output_text(unicode=True, color=False, show_all=False)


def count_statements(engine: Engine) -> list[str]:
    """Every statement the driver runs, with its time in the database (ms)."""
    seen: list[str] = []
    started: list[float] = []

    @event.listens_for(engine, "before_cursor_execute")
    def _before(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        started.append(time.perf_counter())

    @event.listens_for(engine, "after_cursor_execute")
    def _after(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        elapsed = 1000 * (time.perf_counter() - started.pop())
        seen.append(f"{elapsed:7.2f} ms  {' '.join(statement.split())}")

    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="+", help="one or more paths, profiled one after the other")
    parser.add_argument("--method", default="GET")
    parser.add_argument("--teams", type=int, default=1_000)
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--role", choices=["member", "admin"], default="member")
    parser.add_argument("--html", default="")
    parser.add_argument(
        "--miss", action="store_true", help="Drop the read model's entries before each request."
    )
    parser.add_argument(
        "--miss-keep-memos",
        action="store_true",
        help="Drop the entries but keep the memos (a miss at a version already seen).",
    )
    args = parser.parse_args()
    assert JWT_SECRET
    with profiled_database(args.backend) as (url, data_dir):
        output = asyncio.run(_profile(args, url, data_dir))
    if args.html:
        Path(args.html).write_text(output)
        print(f"profile: {args.html}")
    else:
        print(output)
    return 0


@contextmanager
def profiled_database(backend: str) -> Iterator[tuple[str | None, Path]]:
    """A migrated, empty database of ``backend`` (PostgreSQL: a server of its own) and a
    data directory, removed afterwards: ``(database URL or None for SQLite, data dir)``."""
    data_dir = Path(tempfile.mkdtemp(prefix="questline-profile-"))
    server = None
    try:
        url = None
        if backend == "postgresql":
            server = PostgresServer().start()
            url = server.create_database("profile")
        upgrade(settings_for(data_dir, url))
        yield url, data_dir
    finally:
        if server:
            server.cleanup()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())

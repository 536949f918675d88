"""What row-level security costs on PostgreSQL: a read-model miss read and a progress
write, with it on and off, in one run on one server, as JSON.

    .venv/bin/python -m bench.probes.row_security_cost [--teams 1000] [--rounds 7]

Two databases of the same server are seeded alike: one used by its owner (row security
off, the default), one as docs/deploy.md describes it (the service's role owns no table,
``QUESTLINE_DATABASE_ROW_SECURITY`` on). Both apps run in this process (raw ASGI, the
whole middleware stack, as ``cpu_per_request``). The rounds alternate between them, so a
machine whose load drifts slows both alike; each figure is the median over the rounds of
the wall time a request (the database's share is what row security changes: the
organization's ``set_config`` and the policies' filter), ``ratio`` is on / off of
those medians and ``paired`` the median of each round's on / off (the two sides of a
round ran back to back: steadier when the load drifts).

- ``GET /leaderboard?limit=50`` and ``GET /team/{id}``, each a miss of the read model
  (its entries and memos dropped before every request), as an admin;
- the progress write: ``POST /team/{id}/progress`` and its ``DELETE`` (each).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.postgres import OWNER_ROLE, PostgresServer, create_row_security_database

from bench.dataset.seed import Seeded
from bench.harness.service import seed_database, settings_for, tokens_for
from bench.probes.cpu_per_request import Headers, call
from questline.app import create_app
from questline.config import Settings
from questline.storage.migrate import upgrade


class Side:
    """One app (row security on or off) and its seeded ids."""

    def __init__(self, app: Any, seeded: Seeded, token: str) -> None:
        self.app = app
        self.seeded = seeded
        self.headers: Headers = [(b"host", b"t"), (b"authorization", f"Bearer {token}".encode())]
        self.team = str(seeded.team_ids[len(seeded.team_ids) // 2])
        team, task = seeded.progress_pairs[0]
        self.write_team, self.write_task = str(team), str(task)

    async def miss(self, path: str, query: bytes) -> None:
        readmodel = self.app.state.readmodel
        readmodel.cache.drop_bodies()
        readmodel.forget_memos()
        status = await call(self.app, "GET", path, query, self.headers)
        assert status == 200, (path, status)

    async def leaderboard(self) -> None:
        await self.miss("/leaderboard", b"limit=50")

    async def team_detail(self) -> None:
        await self.miss(f"/team/{self.team}", b"")

    async def progress(self) -> None:
        body = json.dumps({"TaskId": self.write_task}).encode()
        posted = [
            *self.headers,
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        path = f"/team/{self.write_team}/progress"
        assert await call(self.app, "POST", path, b"", posted, body) == 201
        deleted = await call(self.app, "DELETE", f"{path}/{self.write_task}", b"", self.headers)
        assert deleted == 204


Prepared = tuple[Settings, Seeded]


def prepare(
    server: PostgresServer, data_dir: Path, teams: int, *, rls: bool, name: str = "rls_off"
) -> Prepared:
    """A migrated, seeded database of ``server`` (outside any event loop: the helpers
    run their own)."""
    owner_url: str | None = None
    if rls:
        owner_url, url = create_row_security_database(server)
        # Seeding switches triggers off (a superuser's setting), as bench/run.py does.
        seed_url = owner_url.replace(f"{OWNER_ROLE}@", f"{PostgresServer.user}@", 1)
    else:
        url = seed_url = server.create_database(name)
    settings = settings_for(data_dir, url, owner_url=owner_url)
    settings = settings.model_copy(update={"rate_limit_enabled": False})
    upgrade(settings)
    seeded = asyncio.run(seed_database(seed_url, teams))
    return settings, seeded


@contextmanager
def scratch_server(prefix: str) -> Iterator[tuple[PostgresServer, Path]]:
    """A PostgreSQL server of the probe's own and a scratch directory, both gone after."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    server = PostgresServer().start()
    try:
        yield server, workdir
    finally:
        server.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


def side_of(prepared: Prepared) -> Side:
    settings, seeded = prepared
    return Side(create_app(settings), seeded, tokens_for(settings, seeded)["admin"])


async def measure(prepared_off: Prepared, prepared_on: Prepared, rounds: int) -> dict[str, Any]:
    off, on = side_of(prepared_off), side_of(prepared_on)
    kinds: dict[str, tuple[Callable[[Side], Awaitable[None]], int]] = {
        "GET /leaderboard?limit=50 (miss)": (Side.leaderboard, 100),
        "GET /team/{id} (miss)": (Side.team_detail, 100),
        "progress write (each of POST, DELETE)": (Side.progress, 50),
    }
    samples: dict[tuple[str, str], list[float]] = {
        (kind, mode): [] for kind in kinds for mode in ("off", "on")
    }
    async with off.app.router.lifespan_context(off.app), on.app.router.lifespan_context(on.app):
        for side in (off, on):  # warm-up: connections, prepared statements, caches
            for act, _ in kinds.values():
                for _ in range(10):
                    await act(side)
        for round_ in range(rounds):
            order = [("off", off), ("on", on)] if round_ % 2 == 0 else [("on", on), ("off", off)]
            for kind, (act, count) in kinds.items():
                for mode, side in order:
                    started = time.perf_counter()
                    for _ in range(count):
                        await act(side)
                    per = (time.perf_counter() - started) / count * 1e6
                    if kind.startswith("progress"):
                        per /= 2
                    samples[(kind, mode)].append(per)
    for side in (off, on):
        await side.app.state.questline.db.dispose()
    found: dict[str, Any] = {}
    for kind in kinds:
        median_off = statistics.median(samples[(kind, "off")])
        median_on = statistics.median(samples[(kind, "on")])
        paired = statistics.median(
            on_ / off_
            for on_, off_ in zip(samples[(kind, "on")], samples[(kind, "off")], strict=True)
        )
        found[kind] = {
            "off_us": round(median_off, 1),
            "on_us": round(median_on, 1),
            "ratio": round(median_on / median_off, 3),
            "paired": round(paired, 3),
        }
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    with scratch_server("questline-rls-cost-") as (server, workdir):
        prepared = {}
        for side in ("off", "on"):
            (workdir / side).mkdir()
            prepared[side] = prepare(server, workdir / side, args.teams, rls=side == "on")
        found = asyncio.run(measure(prepared["off"], prepared["on"], args.rounds))
    print(json.dumps({"teams": args.teams, "rounds": args.rounds, **found}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

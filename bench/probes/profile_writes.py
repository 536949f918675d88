"""Profile the progress write path (POST …/progress then DELETE, alternating) in-process.

    .venv/bin/python -m bench.probes.profile_writes --backend sqlite --clients 16 --pairs 400

Each client takes its own (team, task) pairs, completes one and withdraws it, like
``progress.lua``. Prints the statements of one completion and one withdrawal (with
their time in the database), the mean latency, and the pyinstrument profile.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
from pyinstrument import Profiler

from bench.dataset.seed import seed, seeding_engine
from bench.harness.service import settings_for, tokens_for
from bench.probes.profile_endpoint import count_statements, profiled_database
from questline.app import create_app


async def _profile(args: argparse.Namespace, url: str | None, data_dir: Path) -> str:
    settings = settings_for(data_dir, url).model_copy(update={"rate_limit_enabled": False})
    engine = seeding_engine(settings.resolved_database_url)
    seeded = await seed(engine, args.teams)
    await engine.dispose()
    tokens = tokens_for(settings, seeded)
    app = create_app(settings)
    statements = count_statements(app.state.questline.db.engine.sync_engine)
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {tokens['admin']}"}
    pairs = seeded.progress_pairs

    async def one(c: httpx.AsyncClient, team: object, task: object) -> None:
        made = await c.post(f"/team/{team}/progress", json={"TaskId": str(task)})
        assert made.status_code == 201, made.text
        gone = await c.delete(f"/team/{team}/progress/{task}")
        assert gone.status_code == 204, gone.text

    async with httpx.AsyncClient(
        transport=transport, base_url="http://bench", headers=headers
    ) as c:
        team, task = seeded.spare_pair
        await one(c, team, task)
        statements.clear()
        await c.post(f"/team/{team}/progress", json={"TaskId": str(task)})
        print("POST statements:")
        for s in statements:
            print(f"  {s[:200]}")
        statements.clear()
        await c.delete(f"/team/{team}/progress/{task}")
        print("DELETE statements:")
        for s in statements:
            print(f"  {s[:200]}")
        work = pairs[: args.pairs]

        async def client(n: int) -> None:
            for i in range(n, len(work), args.clients):
                await one(c, *work[i])

        profiler = Profiler(async_mode="disabled" if args.clients > 1 else "enabled")
        started = time.perf_counter()
        cpu = time.process_time()
        cprof: Any = None
        if args.cprofile:
            import cProfile

            cprof = cProfile.Profile()
            cprof.enable()
        elif not args.no_profile:
            profiler.start()
        await asyncio.gather(*(client(n) for n in range(args.clients)))
        if args.cprofile:
            cprof.disable()
            import pstats

            pstats.Stats(cprof).sort_stats("tottime").print_stats(45)
            pstats.Stats(cprof).sort_stats("cumtime").print_stats(60)
        elif not args.no_profile:
            profiler.stop()
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
    await app.state.questline.db.dispose()
    requests = 2 * len(work)
    print(f"{requests} requests in {elapsed:.2f} s: {requests / elapsed:.0f} req/s")
    print(f"CPU {1000 * cpu / requests:.2f} ms a request (all threads)")
    if args.no_profile or args.cprofile:
        return ""
    if args.flat:
        from pyinstrument.renderers import ConsoleRenderer

        return profiler.output(ConsoleRenderer(unicode=True, color=False, flat=True))
    return profiler.output_text(unicode=True, color=False, show_all=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=1_000)
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--flat", action="store_true", help="self time per function")
    parser.add_argument("--cprofile", action="store_true", help="cProfile, by own time")
    args = parser.parse_args()
    with profiled_database(args.backend) as (url, data_dir):
        print(asyncio.run(_profile(args, url, data_dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

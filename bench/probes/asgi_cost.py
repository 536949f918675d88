"""What each layer of the request path costs, in-process, in microseconds a request.

    .venv/bin/python -m bench.probes.asgi_cost [--teams 1000] [--requests 3000]

Requests are raw ASGI calls (no network, no server): the figure is the application's own
CPU per request. Each step is measured by removing it alone from the stack and
taking the difference (each step of the edge pipeline, ``web.edge``); rate limiting is
measured by turning it on. Paths are read-model
hits after a warm-up, so this is the cost of the lean path.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.dataset.seed import seed, seeding_engine
from bench.harness.service import settings_for, tokens_for
from questline.app import create_app
from questline.storage.migrate import upgrade

PATHS = ["/healthz", "/leaderboard?limit=50", "/team/{team}/overview", "/team?limit=100"]


async def _call(app: Any, path: str, headers: list[tuple[bytes, bytes]]) -> int:
    raw_path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": raw_path,
        "raw_path": raw_path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def _per_request(app: Any, path: str, headers: list[Any], n: int) -> float:
    for _ in range(50):
        status = await _call(app, path, headers)
    assert status == 200, (path, status)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(n):
            await _call(app, path, headers)
        best = min(best, (time.perf_counter() - started) / n)
    return best * 1e6


async def _measure(
    settings: Any, paths: list[str], token: str, n: int, drop: str | None
) -> dict[str, float]:
    app = create_app(settings)
    if drop:
        (pipeline,) = app.user_middleware
        steps = pipeline.kwargs["steps"]
        pipeline.kwargs["steps"] = [step for step in steps if step.name != drop]
    headers = [(b"host", b"bench"), (b"authorization", f"Bearer {token}".encode())]
    try:
        return {p: await _per_request(app, p, headers, n) for p in paths}
    finally:
        await app.state.questline.db.dispose()


async def _run(args: argparse.Namespace, data_dir: Path) -> None:
    settings = settings_for(data_dir, None).model_copy(update={"rate_limit_enabled": False})
    engine = seeding_engine(settings.resolved_database_url)
    seeded = await seed(engine, args.teams)
    await engine.dispose()
    token = tokens_for(settings, seeded)["member"]
    team = str(seeded.team_ids[len(seeded.team_ids) // 2])
    paths = [p.replace("{team}", team) for p in PATHS]
    base = await _measure(settings, paths, token, args.requests, None)
    app = create_app(settings)
    names = [step.name for step in app.user_middleware[0].kwargs["steps"]]
    await app.state.questline.db.dispose()
    print(f"{'variant':38}" + "".join(f"{p.split('?')[0][:22]:>24}" for p in PATHS))
    print(f"{'full stack (µs a request)':38}" + "".join(f"{base[p]:24.1f}" for p in paths))
    for name in names:
        without = await _measure(settings, paths, token, args.requests, name)
        print(f"{'cost of ' + name:38}" + "".join(f"{base[p] - without[p]:24.1f}" for p in paths))
    limited = settings.model_copy(
        update={"rate_limit_enabled": True, "rate_limit_reads": "100000000/minute"}
    )
    with_limits = await _measure(limited, paths, token, args.requests, None)
    print(
        f"{'cost of rate limiting (on)':38}"
        + "".join(f"{with_limits[p] - base[p]:24.1f}" for p in paths)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=2_000)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="questline-asgi-cost-"))
    try:
        upgrade(settings_for(data_dir, None))
        asyncio.run(_run(args, data_dir))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What one ``GET /metrics`` scrape costs, in-process (no network, no server).

    .venv/bin/python -m bench.probes.metrics_cost [--scrapes 200]

The registry is first filled as a busy process fills it: every route of the document
called with a few statuses, so the request counter and latency histogram hold their
realistic number of series. Then scrapes are timed back to back (the figure with the
render cache) and spaced past the cache's age (the figure of a fresh render).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import httpx

from questline.app import create_app
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role


def main(scrapes: int) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(data_dir=data_dir, rate_limit_enabled=False, _env_file=None)  # type: ignore[call-arg]
        upgrade(settings)
        asyncio.run(measure(settings, scrapes))


async def measure(settings: Settings, scrapes: int) -> None:
    if True:
        app = create_app(settings)
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://bench.test") as client,
        ):
            paths = app.openapi()["paths"]
            for path, item in paths.items():
                concrete = path.replace("{", "").replace("}", "")
                for method in item:
                    if method in ("get", "post", "put", "patch", "delete"):
                        for _ in range(3):
                            await client.request(method.upper(), concrete)
            # A Prometheus scrapes with an operator token (/metrics is closed otherwise).
            operator = TokenService(settings).mint(role=Role.OPERATOR, org_id=None, subject="p")
            client.headers["Authorization"] = f"Bearer {operator}"
            first = await client.get("/metrics")
            series = sum(1 for line in first.text.splitlines() if not line.startswith("#"))
            cached = []
            for _ in range(scrapes):
                started = time.perf_counter()
                await client.get("/metrics")
                cached.append(time.perf_counter() - started)
            fresh = []
            age = app.state.questline.settings.metrics_cache_seconds
            for _ in range(min(scrapes, 30)):
                await asyncio.sleep(age + 0.01)
                started = time.perf_counter()
                await client.get("/metrics")
                fresh.append(time.perf_counter() - started)
    print(f"series: {series}, body: {len(first.content)} bytes")
    print(f"scrape, back to back (cached): median {statistics.median(cached) * 1000:.2f} ms")
    print(f"scrape, fresh render:          median {statistics.median(fresh) * 1000:.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scrapes", type=int, default=200)
    main(parser.parse_args().scrapes)

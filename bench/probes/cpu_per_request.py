"""CPU time per request in-process (raw ASGI, the whole middleware stack): hits of the
read model, a routed ``GET /healthz`` for scale, and a progress write + withdrawal, as
JSON. Less sensitive to a loaded machine than wrk: it counts this process's CPU (threads
included), not wall time.

Run ``python -m bench.probes.cpu_per_request``; to compare with another checkout, put its
``src`` first: ``PYTHONPATH=../old/src python -m bench.probes.cpu_per_request``.
``--profile`` prints cProfile's top functions over 3,000 leaderboard hits (by own time
and by cumulative time): where a hit's CPU goes beside the floor's (bench/harness/floor.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import tempfile
import time
import uuid
from typing import Any

import httpx

from questline.app import create_app
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade

try:
    from questline.web.identity import Role
except ImportError:  # an older checkout
    from questline.auth.tokens import Role  # type: ignore[attr-defined,no-redef]

Headers = list[tuple[bytes, bytes]]
DISCIPLINE = {
    "Title": "D",
    "Description": "d",
    "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [{"Title": "T", "Points": 5}]}]}],
}


def _scope(method: str, path: str, query: bytes, headers: Headers) -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "headers": headers,
        "http_version": "1.1",
        "scheme": "http",
        "server": ("t", 80),
        "client": ("127.0.0.1", 1),
        "root_path": "",
        "state": {},
    }


async def call(
    app: Any, method: str, path: str, query: bytes, headers: Headers, body: bytes = b""
) -> int:
    status = 0
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(_scope(method, path, query, headers), receive, send)
    return status


async def measure(settings: Settings) -> dict[str, float]:
    app = create_app(settings)
    org = uuid.uuid4()
    token = TokenService(settings).mint(role=Role.ADMIN, org_id=org, subject="a")
    headers: Headers = [(b"host", b"t"), (b"authorization", f"Bearer {token}".encode())]
    found: dict[str, float] = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            admin = {"Authorization": f"Bearer {token}"}
            team = (await client.post("/team", json={"Name": "A"}, headers=admin)).json()["Id"]
            for i in range(50):
                await client.post("/team", json={"Name": f"T{i}"}, headers=admin)
            created = await client.post("/discipline", json=DISCIPLINE, headers=admin)
            task = created.json()["Levels"][0]["Quests"][0]["Tasks"][0]["Id"]
        reads = [
            ("GET /leaderboard?limit=50", "/leaderboard", b"limit=50"),
            ("GET /team/{id}", f"/team/{team}", b""),
            ("GET /healthz", "/healthz", b""),
        ]
        for name, path, query in reads:
            assert await call(app, "GET", path, query, headers) == 200, name
            samples = []
            for _ in range(5):
                started = time.process_time()
                for _ in range(500):
                    await call(app, "GET", path, query, headers)
                samples.append((time.process_time() - started) / 500 * 1e6)
            found[name] = statistics.median(samples)
        body = json.dumps({"TaskId": task}).encode()
        length = str(len(body)).encode()
        posted = [*headers, (b"content-type", b"application/json"), (b"content-length", length)]
        samples = []
        for _ in range(5):
            started = time.process_time()
            for _ in range(150):
                assert await call(app, "POST", f"/team/{team}/progress", b"", posted, body) == 201
                assert (
                    await call(app, "DELETE", f"/team/{team}/progress/{task}", b"", headers) == 204
                )
            samples.append((time.process_time() - started) / 300 * 1e6)
        found["progress write (each of POST, DELETE)"] = statistics.median(samples)
    await app.state.questline.db.dispose()
    return found


async def profile_hits(settings: Settings, requests: int = 3_000) -> str:
    """cProfile over ``requests`` hits of ``GET /leaderboard?limit=50``: the top functions
    by own time and by cumulative time."""
    import cProfile
    import io
    import pstats

    app = create_app(settings)
    org = uuid.uuid4()
    token = TokenService(settings).mint(role=Role.MEMBER, org_id=org, subject="m")
    headers: Headers = [(b"host", b"t"), (b"authorization", f"Bearer {token}".encode())]
    async with app.router.lifespan_context(app):
        for _ in range(3):
            assert await call(app, "GET", "/leaderboard", b"limit=50", headers) == 200
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(requests):
            await call(app, "GET", "/leaderboard", b"limit=50", headers)
        profiler.disable()
    await app.state.questline.db.dispose()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(45)
    return out.getvalue()


def main() -> None:
    import sys

    logging.disable(logging.CRITICAL)
    settings = Settings(_env_file=None, data_dir=tempfile.mkdtemp(), rate_limit_enabled=False)
    upgrade(settings)
    if "--profile" in sys.argv[1:]:
        print(asyncio.run(profile_hits(settings)))
        return
    print(json.dumps({name: round(us, 1) for name, us in asyncio.run(measure(settings)).items()}))


if __name__ == "__main__":
    main()

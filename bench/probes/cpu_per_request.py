"""CPU time per request in-process (raw ASGI, the whole middleware stack): hits of the
read model and a progress write + withdrawal, as JSON. Less sensitive to a loaded
machine than wrk: it counts this process's CPU (threads included), not wall time. Run
``python -m bench.probes.cpu_per_request``; to compare with another checkout, put its
``src`` first: ``PYTHONPATH=../old/src python -m bench.probes.cpu_per_request``."""

import asyncio
import json
import logging
import statistics
import tempfile
import time
import uuid

import httpx

from questline.app import create_app
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade

try:
    from questline.web.identity import Role
except ImportError:
    from questline.auth.tokens import Role
logging.disable(logging.CRITICAL)
data = tempfile.mkdtemp()
settings = Settings(_env_file=None, data_dir=data, rate_limit_enabled=False)
upgrade(settings)


def scope_of(method, path, qs, headers):
    return {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": qs,
        "headers": headers,
        "http_version": "1.1",
        "scheme": "http",
        "server": ("t", 80),
        "client": ("127.0.0.1", 1),
        "root_path": "",
        "state": {},
    }


async def call(app, method, path, qs, headers, body=b""):
    status = 0
    sent = False

    async def receive():
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(m):
        nonlocal status
        if m["type"] == "http.response.start":
            status = m["status"]

    await app(scope_of(method, path, qs, headers), receive, send)
    return status


async def main():
    app = create_app(settings)
    tokens = TokenService(settings)
    org = uuid.uuid4()
    auth = ("Bearer " + tokens.mint(role=Role.ADMIN, org_id=org, subject="a")).encode()
    h = [(b"host", b"t"), (b"authorization", auth)]
    out = {}
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as c:
            H = {"Authorization": auth.decode()}
            team = (await c.post("/team", json={"Name": "A"}, headers=H)).json()["Id"]
            for i in range(50):
                await c.post("/team", json={"Name": f"T{i}"}, headers=H)
            doc = {
                "Title": "D",
                "Description": "d",
                "Levels": [
                    {
                        "Title": "L",
                        "Quests": [{"Title": "Q", "Tasks": [{"Title": "T", "Points": 5}]}],
                    }
                ],
            }
            d = (await c.post("/discipline", json=doc, headers=H)).json()
            task = d["Levels"][0]["Quests"][0]["Tasks"][0]["Id"]
        cases = [
            ("GET /leaderboard?limit=50", "GET", "/leaderboard", b"limit=50", h, b""),
            ("GET /team/{id}", "GET", f"/team/{team}", b"", h, b""),
            ("GET /healthz", "GET", "/healthz", b"", h, b""),
        ]
        for name, m, p, q, hh, b in cases:
            assert await call(app, m, p, q, hh, b) == 200, name
            samples = []
            for _ in range(5):
                t = time.process_time()
                n = 500
                for _ in range(n):
                    await call(app, m, p, q, hh, b)
                samples.append((time.process_time() - t) / n * 1e6)
            out[name] = statistics.median(samples)
        body = json.dumps({"TaskId": task}).encode()
        wh = h + [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        samples = []
        for _ in range(5):
            t = time.process_time()
            n = 150
            for _ in range(n):
                assert await call(app, "POST", f"/team/{team}/progress", b"", wh, body) == 201
                assert await call(app, "DELETE", f"/team/{team}/progress/{task}", b"", h) == 204
            samples.append((time.process_time() - t) / n / 2 * 1e6)
        out["progress write (each of POST, DELETE)"] = statistics.median(samples)
    await app.state.questline.db.dispose()
    print(json.dumps(out))


asyncio.run(main())

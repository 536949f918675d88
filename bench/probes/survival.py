"""CPU of reads around writes that do not touch them, in-process (SQLite in a scratch
directory). Twenty teams hold 0, 5, … 95 points; a round is a completion (5 points) on
the team of 50, a read of every other team (``GET /team/{id}`` and its overview) and
of the discipline, the completion's withdrawal, and the same reads again: neither step
passes another team. Reads a write did not touch are carried to its version without a statement
(docs/performance.md, "Reads that survive writes"); run the probe against an older
checkout (``PYTHONPATH=<checkout>/src:.``) for the reference.

    .venv/bin/python -m bench.probes.survival
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
import time
import uuid

import httpx

from bench.probes.cpu_per_request import Headers, call
from questline.app import create_app
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role

TEAMS = 20
ROUNDS = 60
RUNS = 5
DOCUMENT = {
    "Title": "D",
    "Description": "d",
    "Levels": [
        {
            "Title": "L",
            "Quests": [
                {"Title": "Q", "Tasks": [{"Title": f"T{i}", "Points": 5} for i in range(40)]}
            ],
        }
    ],
}


async def _measure(settings: Settings) -> list[float]:
    app = create_app(settings)
    token = TokenService(settings).mint(role=Role.ADMIN, org_id=uuid.uuid4(), subject="a")
    headers: Headers = [(b"host", b"t"), (b"authorization", f"Bearer {token}".encode())]
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            admin = {"Authorization": f"Bearer {token}"}
            teams = [
                (await client.post("/team", json={"Name": f"T{i}"}, headers=admin)).json()["Id"]
                for i in range(TEAMS)
            ]
            made = (await client.post("/discipline", json=DOCUMENT, headers=admin)).json()
            tasks = [t["Id"] for t in made["Levels"][0]["Quests"][0]["Tasks"]]
            for n, team in enumerate(teams):
                for done in tasks[1 : n + 1]:
                    await client.post(
                        f"/team/{team}/progress", json={"TaskId": done}, headers=admin
                    )
        task, stepping = tasks[0], teams[TEAMS // 2]
        others = [team for team in teams if team != stepping]
        reads = [f"/team/{team}{part}" for team in others for part in ("", "/overview")]
        reads.append(f"/discipline/{made['Id']}")
        body = json.dumps({"TaskId": task}).encode()
        as_json = [*headers, (b"content-type", b"application/json")]

        async def round_() -> None:
            await call(app, "POST", f"/team/{stepping}/progress", b"", as_json, body)
            for path in reads:
                await call(app, "GET", path, b"", headers)
            await call(app, "DELETE", f"/team/{stepping}/progress/{task}", b"", headers)
            for path in reads:
                await call(app, "GET", path, b"", headers)

        for _ in range(ROUNDS // 3):
            await round_()
        found = []
        for _ in range(RUNS):
            started = time.process_time()
            for _ in range(ROUNDS):
                await round_()
            found.append((time.process_time() - started) / ROUNDS * 1e3)
        return found


def main() -> None:
    logging.disable(logging.CRITICAL)
    scratch = tempfile.mkdtemp()
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=f"sqlite+aiosqlite:///{scratch}/probe.db",
        rate_limit_enabled=False,
        access_log=False,
    )
    upgrade(settings)
    found = sorted(asyncio.run(_measure(settings)))
    print(
        f"ms of CPU a round (2 writes, {2 * (2 * TEAMS - 1)} reads): "
        f"min {found[0]:.2f}, median {found[len(found) // 2]:.2f}"
    )


if __name__ == "__main__":
    main()

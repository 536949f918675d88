"""CPU time per request in-process (raw ASGI, the whole middleware stack) of the learners'
writes beside an admin's progress write, as JSON: ``POST /team/{id}/progress`` (with its
``DELETE``, each), a wrong ``POST /team/{id}/attempts``, a right one (with the admin's
``DELETE`` that lets it be answered again, each), and a first hint unlock.

Run ``python -m bench.probes.learners_cost`` (SQLite in a scratch directory). Like
``cpu_per_request``, it counts this process's CPU, not wall time: the ratios hold on a
loaded machine where wrk's requests/s do not.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
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

ROUNDS = 5
EACH = 100
HINTED_TASKS = ROUNDS * EACH


def _document() -> dict[str, object]:
    hinted = [
        {"Title": f"H{i}", "Hints": [{"Text": f"hint {i}", "Cost": 1}]} for i in range(HINTED_TASKS)
    ]
    return {
        "Title": "D",
        "Description": "d",
        "Levels": [
            {
                "Title": "L",
                "Quests": [
                    {
                        "Title": "Q",
                        "Tasks": [
                            {"Title": "T", "Points": 5},
                            {
                                "Title": "A",
                                "Points": 5,
                                "Check": {"Kind": "Answer", "Answers": [{"Value": "right"}]},
                            },
                        ],
                    },
                    *[
                        {"Title": f"QH{n}", "Tasks": hinted[n * 100 : (n + 1) * 100]}
                        for n in range(HINTED_TASKS // 100)
                    ],
                ],
            }
        ],
    }


def _per_request(samples: list[float]) -> float:
    return round(statistics.median(samples), 1)


async def measure(settings: Settings) -> dict[str, float]:
    app = create_app(settings)
    org = uuid.uuid4()
    tokens = TokenService(settings)
    admin_token = tokens.mint(role=Role.ADMIN, org_id=org, subject="a")
    member_token = tokens.mint(
        role=Role.MEMBER, org_id=org, subject="m", email="learner@example.org"
    )
    admin: Headers = [(b"host", b"t"), (b"authorization", f"Bearer {admin_token}".encode())]
    member: Headers = [(b"host", b"t"), (b"authorization", f"Bearer {member_token}".encode())]
    found: dict[str, float] = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            auth = {"Authorization": f"Bearer {admin_token}"}
            team = (await client.post("/team", json={"Name": "A"}, headers=auth)).json()["Id"]
            added = await client.post(
                f"/team/{team}/members",
                json={"email": "learner@example.org", "givenName": "L"},
                headers=auth,
            )
            assert added.status_code == 201, added.text
            created = (await client.post("/discipline", json=_document(), headers=auth)).json()
            quests = created["Levels"][0]["Quests"]
            plain, answer = (t["Id"] for t in quests[0]["Tasks"])
            hinted = [t["Id"] for q in quests[1:] for t in q["Tasks"]]

        def post(body: dict[str, object], headers: Headers) -> tuple[bytes, Headers]:
            raw = json.dumps(body).encode()
            length = str(len(raw)).encode()
            extra = [(b"content-type", b"application/json"), (b"content-length", length)]
            return raw, [*headers, *extra]

        async def pairs(path: str, body: dict[str, object], headers: Headers, task: str) -> float:
            raw, sent = post(body, headers)
            samples = []
            for _ in range(ROUNDS):
                started = time.process_time()
                for _ in range(EACH):
                    assert await call(app, "POST", path, b"", sent, raw) == 201
                    withdraw = f"/team/{team}/progress/{task}"
                    assert await call(app, "DELETE", withdraw, b"", admin) == 204
                samples.append((time.process_time() - started) / (2 * EACH) * 1e6)
            return _per_request(samples)

        found["POST /team/{id}/progress (with its DELETE, each)"] = await pairs(
            f"/team/{team}/progress", {"TaskId": plain}, admin, plain
        )
        found["right POST /team/{id}/attempts (with the DELETE, each)"] = await pairs(
            f"/team/{team}/attempts", {"TaskId": answer, "Answer": "right"}, member, answer
        )
        raw, sent = post({"TaskId": answer, "Answer": "wrong"}, member)
        samples = []
        for _ in range(ROUNDS):
            started = time.process_time()
            for _ in range(EACH):
                assert await call(app, "POST", f"/team/{team}/attempts", b"", sent, raw) == 200
            samples.append((time.process_time() - started) / EACH * 1e6)
        found["wrong POST /team/{id}/attempts"] = _per_request(samples)
        samples = []
        for round_ in range(ROUNDS):
            started = time.process_time()
            for task in hinted[round_ * EACH : (round_ + 1) * EACH]:
                raw, sent = post({"TaskId": task, "Index": 0}, member)
                assert await call(app, "POST", f"/team/{team}/hints", b"", sent, raw) == 201
            samples.append((time.process_time() - started) / EACH * 1e6)
        found["POST /team/{id}/hints (first unlock)"] = _per_request(samples)
    await app.state.questline.db.dispose()
    return found


def main() -> None:
    logging.disable(logging.CRITICAL)
    settings = Settings(
        _env_file=None,
        data_dir=tempfile.mkdtemp(),
        rate_limit_enabled=False,
        attempts_per_minute=10_000,
    )
    upgrade(settings)
    print(json.dumps(asyncio.run(measure(settings)), indent=1))


if __name__ == "__main__":
    main()

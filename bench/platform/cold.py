"""A read of an organization whose read-model entry was evicted: statements and latency,
against the same read warm (a hit), in-process on the benchmark's database.

For each read of the traffic, on the largest organization: ``repeats`` requests answered
from the entry (warm), then ``repeats`` requests each after the process's entries were
dropped (``cold``: the entry evicted, what the process remembers of the organization's
version and its memos kept — what an eviction by the LRU leaves), then ``repeats`` after
the memos were dropped too (``cold org``: the discipline tree and rank memos gone as
well, an organization not read for long). The statements are those the database driver
runs through the engine and the read model's lean misses (as bench/harness/statements.py
counts them). One request at a time through the ASGI stack (httpx's ASGITransport): the
latency of a read on an idle process, not under load.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx
from sqlalchemy import event

from bench.dataset.rules import Kind
from bench.dataset.sqlgen import ident
from bench.harness.statements import readmodel_of_app
from questline.app import create_app
from questline.config import Settings


def reads(first_team: int, size: int) -> list[tuple[str, str]]:
    """(name, path) of the traffic's reads, on a team in the middle of the organization."""
    team = ident(Kind.TEAM, first_team + size // 2)
    discipline = ident(Kind.DISCIPLINE, 0)
    return [
        ("GET /leaderboard?limit=50", "/leaderboard?limit=50"),
        ("GET /team/{id}/overview", f"/team/{team}/overview"),
        ("GET /team/{id}", f"/team/{team}"),
        ("GET /leaderboard/graph?top=10", "/leaderboard/graph?top=10"),
        ("GET /discipline/{id}", f"/discipline/{discipline}"),
        ("GET /team?limit=100", "/team?limit=100"),
    ]


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def measure(
    settings: Settings, token: str, first_team: int, size: int, repeats: int
) -> list[dict[str, Any]]:
    app = create_app(settings.model_copy(update={"rate_limit_enabled": False}))
    state = app.state.questline
    readmodel = readmodel_of_app(app)
    sent: list[str] = []

    def count(*_args: Any) -> None:
        sent.append("")

    event.listen(state.db.engine.sync_engine, "before_cursor_execute", count)
    readmodel.lean.listeners.append(count)
    rows = []
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench", headers=headers
        ) as client:
            for name, path in reads(first_team, size):
                for _ in range(3):  # the route, then the fast lane, warm
                    (await client.get(path)).raise_for_status()
                timings: dict[str, list[float]] = {"warm": [], "cold": [], "cold_org": []}
                statements: dict[str, list[int]] = {"warm": [], "cold": [], "cold_org": []}
                for phase in ("warm", "cold", "cold_org"):
                    for _ in range(repeats):
                        if phase != "warm":
                            readmodel.cache.drop_bodies()
                        if phase == "cold_org":
                            readmodel.forget_memos()
                        sent.clear()
                        started = time.perf_counter()
                        answer = await client.get(path)
                        timings[phase].append((time.perf_counter() - started) * 1000)
                        statements[phase].append(len(sent))
                        answer.raise_for_status()
                warm_p99 = _p99(timings["warm"])
                rows.append(
                    {
                        "name": name,
                        "teams": size,
                        "statements_warm": max(statements["warm"]),
                        "statements_cold": max(statements["cold"]),
                        "statements_cold_org": max(statements["cold_org"]),
                        "warm_p50_ms": round(statistics.median(timings["warm"]), 3),
                        "warm_p99_ms": round(warm_p99, 3),
                        "cold_p50_ms": round(statistics.median(timings["cold"]), 3),
                        "cold_p99_ms": round(_p99(timings["cold"]), 3),
                        "cold_org_p99_ms": round(_p99(timings["cold_org"]), 3),
                        "cold_over_warm_p99": round(_p99(timings["cold"]) / warm_p99, 2),
                        "cold_org_over_warm_p99": round(_p99(timings["cold_org"]) / warm_p99, 2),
                    }
                )
    finally:
        await state.db.dispose()
    return rows

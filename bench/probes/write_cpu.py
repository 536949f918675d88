"""Worker CPU a progress write costs on PostgreSQL, in-process (raw ASGI, the whole
middleware stack, the group commit and the outbox's dispatchers of the same process), as
JSON: ``POST /team/{id}/progress`` and its ``DELETE``, each, one at a time.

    .venv/bin/python -m bench.probes.write_cpu [--teams 1000] [--rounds 5] [--each 200]

It counts this process's CPU (threads included), not wall time, so the figure holds on a
loaded machine; the database server's CPU is not in it. Two organizations' writes are
measured, in alternating rounds on one server:

- ``no consumer``: the seeded organization, with no webhook, LRS or gradebook (no outbox
  consumer listens: its writes record no event);
- ``a consumer listens``: the same after it registers a webhook (for an event type the
  writes do not send, so nothing is delivered): its writes record their events and the
  fan-out pass reads and deletes them.

Each figure is the median over the rounds of the CPU a write.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import time
from typing import Any

from bench.probes.cpu_per_request import call
from bench.probes.row_security_cost import Prepared, Side, prepare, scratch_server, side_of

QUIET_WEBHOOK = {"url": "http://127.0.0.1:9/questline", "events": ["team.deleted"]}
"""Never sent to: no write deletes a team (the loopback address needs
``webhooks_allow_private_urls``, which the listened side's settings turn on)."""


async def _cpu_a_write(side: Side, each: int) -> float:
    started = time.process_time()
    for _ in range(each):
        await side.progress()
    return (time.process_time() - started) / each / 2 * 1e3


async def _listen(side: Side) -> None:
    body = json.dumps(QUIET_WEBHOOK).encode()
    headers = [
        *side.headers,
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    assert await call(side.app, "POST", "/webhook", b"", headers, body) == 201


async def measure(quiet: Prepared, listened: Prepared, rounds: int, each: int) -> dict[str, Any]:
    settings, seeded = listened
    listened = (settings.model_copy(update={"webhooks_allow_private_urls": True}), seeded)
    sides = {"no consumer": side_of(quiet), "a consumer listens": side_of(listened)}
    samples: dict[str, list[float]] = {name: [] for name in sides}
    apps = [side.app for side in sides.values()]
    async with apps[0].router.lifespan_context(apps[0]), apps[1].router.lifespan_context(apps[1]):
        await _listen(sides["a consumer listens"])
        for side in sides.values():  # warm-up: connections, prepared statements
            await _cpu_a_write(side, 20)
        for round_ in range(rounds):
            names = list(sides) if round_ % 2 == 0 else list(reversed(sides))
            for name in names:
                samples[name].append(await _cpu_a_write(sides[name], each))
    for app in apps:
        await app.state.questline.db.dispose()
    return {
        "cpu ms a write (each of POST, DELETE)": {
            name: round(statistics.median(values), 3) for name, values in samples.items()
        },
        "goal": "<= 3 ms",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--each", type=int, default=200)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    with scratch_server("questline-write-cpu-") as (server, work):
        (work / "quiet").mkdir()
        (work / "listened").mkdir()
        quiet = prepare(server, work / "quiet", args.teams, rls=False, name="quiet")
        listened = prepare(server, work / "listened", args.teams, rls=False, name="listened")
        found = asyncio.run(measure(quiet, listened, args.rounds, args.each))
    print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()

"""Open streams held by client processes of their own.

A process may hold as many sockets as its open-file limit allows (20,000 on the bench
machine, hard), and 10,000 streams a worker on PostgreSQL's two workers are 20,000 sockets
on the client's side. So the streams are spread over holder processes
(``python -m bench.platform.holders <port>``), each at most ``PER_PROCESS`` streams, each
talking JSON lines over its stdin and stdout:

1. in: ``{"plan": [[organization, token], ...]}``; out: ``{"open": n, "refused": m,
   "retried": r, "seconds": s}`` once every stream got its first event (or its refusal);
2. in: ``{"writes": [[organization, sent, answered, team, completed], ...]}``
   (``streams.Done``; its times are ``time.monotonic()``, one clock for every process
   of the machine); out: ``{"latencies_ms": [...], "missed": k, "before_201": b}`` over
   this holder's streams of each written organization (bench/platform/streams.py,
   ``arrivals``);
3. in: ``{"close": true}``: the holder closes its streams and exits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from typing import Any

from bench.platform import streams

PER_PROCESS = 8_000
"""Streams a holder process: well under the open-file limit, with room for its own files."""


@dataclass
class Holder:
    process: asyncio.subprocess.Process

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"holder {self.process.pid} exited ({self.process.returncode})")
        answer: dict[str, Any] = json.loads(line)
        return answer


@dataclass
class Holders:
    """The plan's streams, held by ``ceil(len(plan) / PER_PROCESS)`` processes."""

    holders: list[Holder]
    opened: int
    refused: int
    retried: int
    seconds: float

    @classmethod
    async def open(
        cls, port: int, plan: list[tuple[int, str]], per_process: int = PER_PROCESS
    ) -> Holders:
        count = max(1, math.ceil(len(plan) / per_process))
        holders = [
            Holder(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "bench.platform.holders",
                    str(port),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    limit=2**24,
                )
            )
            for _ in range(count)
        ]
        parts = [plan[i::count] for i in range(count)]  # every organization on each
        answers = await asyncio.gather(
            *(h.ask({"plan": part}) for h, part in zip(holders, parts, strict=True))
        )
        return cls(
            holders,
            opened=sum(a["open"] for a in answers),
            refused=sum(a["refused"] for a in answers),
            retried=sum(a["retried"] for a in answers),
            seconds=max(a["seconds"] for a in answers),
        )

    async def arrivals(self, writes: list[streams.Done]) -> streams.Arrivals:
        """Write → event times (ms) over every held stream of each written organization,
        and how many of those streams saw no event for their write."""
        sent = [write.as_json() for write in writes]
        answers = await asyncio.gather(*(h.ask({"writes": sent}) for h in self.holders))
        return streams.Arrivals(
            latencies_ms=[ms for a in answers for ms in a["latencies_ms"]],
            missed=sum(a["missed"] for a in answers),
            before_201=sum(a["before_201"] for a in answers),
        )

    async def close(self) -> None:
        for holder in self.holders:
            assert holder.process.stdin is not None
            holder.process.stdin.write(b'{"close": true}\n')
            await holder.process.stdin.drain()
            holder.process.stdin.close()
        await asyncio.gather(*(h.process.wait() for h in self.holders))


async def _command() -> dict[str, Any]:
    line = await asyncio.to_thread(sys.stdin.readline)
    return json.loads(line) if line else {"close": True}


def _answer(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def _hold(port: int) -> None:
    plan = [(org, token) for org, token in (await _command())["plan"]]
    held, seconds, retried = await streams.open_many(port, plan)
    _answer(
        {"open": len(held), "refused": len(plan) - len(held), "retried": retried,
         "seconds": seconds}
    )  # fmt: skip
    while "close" not in (command := await _command()):
        writes = [streams.Done(*write) for write in command["writes"]]
        _answer(dataclasses.asdict(streams.arrivals(held, writes)))
    await streams.close_all(held)


if __name__ == "__main__":
    streams.more_files()
    asyncio.run(_hold(int(sys.argv[1])))

"""The loop-slice probe, loaded into a live server by ``site`` (this directory on
``PYTHONPATH``) when ``QUESTLINE_TEST_LOOP_PROBE`` names a file.

A callback on the server's event loop reschedules itself every millisecond and
measures the **CPU time of the loop's thread** (``time.thread_time``) spent since it
last ran: the work the loop did in one stretch without coming back to it. Stretches of
2 ms or more are appended to the file as ``<time.monotonic()> <cpu seconds>``. CPU
time, not wall-clock time: a loaded machine that preempts the server stretches the
wall clock, not this; work moved to a worker thread is not counted at all.
"""

from __future__ import annotations

import os

_PATH = os.environ.get("QUESTLINE_TEST_LOOP_PROBE")
RECORD_FROM = 0.002
EVERY = 0.001


def _install(path: str) -> None:
    import asyncio
    import time
    from typing import Any

    import uvicorn.server

    serve = uvicorn.server.Server.serve
    out = open(path, "a", buffering=1)  # noqa: SIM115 - open for the server's life

    async def probed(self: Any, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        last = time.thread_time()
        out.write("probing\n")

        def tick() -> None:
            nonlocal last
            now = time.thread_time()
            if now - last >= RECORD_FROM:
                out.write(f"{time.monotonic():.6f} {now - last:.6f}\n")
            last = time.thread_time()
            loop.call_later(EVERY, tick)

        loop.call_soon(tick)
        return await serve(self, *args, **kwargs)

    uvicorn.server.Server.serve = probed  # type: ignore[method-assign]


if _PATH:
    _install(_PATH)

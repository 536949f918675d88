"""An application behind uvicorn, as ``questline serve`` runs it, in the test's own event
loop: what a network client sees (a response complete before the application's call
returns), and the tasks the server runs, for a test to read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from fastapi import FastAPI

from questline.config import Settings
from questline.web.server_options import uvicorn_options
from tests.support.hang import HANG_GUARD
from tests.support.postgres import free_port


@asynccontextmanager
async def serving(app: FastAPI, settings: Settings) -> AsyncIterator[str]:
    """``app`` served on a free loopback port with the server options of ``settings``;
    yields its base URL."""
    port = free_port()
    options = uvicorn_options(settings, host="127.0.0.1", port=port, workers=1)
    for name in ("app", "factory", "workers", "timeout_worker_healthcheck"):
        options.pop(name)
    server = uvicorn.Server(uvicorn.Config(app, **options))
    served = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(HANG_GUARD):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event
                await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await served

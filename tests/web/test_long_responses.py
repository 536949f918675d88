"""A response that lives for hours (an open event stream) keeps only the frames of the
layers that must see its end: a layer that only checks and hands on answers with the
next layer's awaitable instead of awaiting it (docs/performance.md, "Stream memory").

The stream is opened on uvicorn in this process, with every layer of the default
configuration (the rate limiter, the host rule), and the coroutines its task awaits
through are read from the task itself: what is asserted is the structure, not a
measurement."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from questline.app import create_app
from questline.config import Settings
from tests.factories import World
from tests.support.hang import HANG_GUARD
from tests.support.serving import serving
from tests.support.sse import SseReader

pytestmark = pytest.mark.anyio

KEPT = [
    "Application.__call__",  # one frame where FastAPI's and Starlette's kept two
    "ServerErrorMiddleware.__call__",  # the last resort for a failure in a layer below
    "CorrelationIdMiddleware.__call__",  # the request id, in the logs and the response
    "AccessLogMiddleware.__call__",  # logs and counts the response when it ends
    "RateLimitMiddleware.__call__",  # the verdict is awaited: one small frame remains
    "CrashGuardMiddleware.__call__",  # a crash before the response starts: a problem
    "FastLane._take",
    "EventStream.__call__",
]
"""The frames an open stream keeps below the server's, outermost first. FastAPI's own
exception telemetry and body limit sit next to the router (web/application.py): a
stream the fast lane answers never enters them."""


def _chain(task: asyncio.Task[Any]) -> list[tuple[str, str]]:
    """(module, qualified name) of each coroutine the task awaits through, outermost first."""
    frames: list[tuple[str, str]] = []
    awaited: Any = task.get_coro()
    while awaited is not None and hasattr(awaited, "cr_code"):
        module = awaited.cr_frame.f_globals.get("__name__", "") if awaited.cr_frame else ""
        frames.append((module, awaited.cr_code.co_qualname))
        awaited = awaited.cr_await
    return frames


def _stream_chain() -> list[tuple[str, str]]:
    for task in asyncio.all_tasks():
        chain = _chain(task)
        if any(name == "EventStream.__call__" for _, name in chain):
            return chain
    raise AssertionError("no task is serving the stream")


async def test_an_open_stream_keeps_only_the_layers_that_see_its_end(
    settings: Settings, world: World
) -> None:
    org = world.org()
    served = settings.model_copy(update={"rate_limit_enabled": True, "allowed_hosts": "127.0.0.1"})
    async with (
        serving(create_app(served), served) as url,
        httpx.AsyncClient(base_url=url, timeout=HANG_GUARD) as client,
        client.stream("GET", "/leaderboard/stream", headers=org.member) as response,
    ):
        assert response.status_code == 200
        assert response.headers["ratelimit-limit"]  # the rate limiter answered it
        assert response.headers["content-security-policy"]  # and the security headers
        assert (await SseReader(response).event()).event == "leaderboard"
        chain = _stream_chain()
    below_server = [name for module, name in chain if not module.startswith("uvicorn.")]
    assert below_server == KEPT, "\n".join(f"{module}: {name}" for module, name in chain)

"""Fixtures of the reliability tests: apps with other settings, and a Redis server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from questline.app import create_app
from questline.config import Settings
from questline.web.hardening import drain
from tests.support.redis import RedisServer

AppFactory = Callable[..., FastAPI]


@pytest.fixture
def settings(migrated_settings: Settings) -> Settings:
    """Event streams end at once here: the in-process client reads whole bodies, and the
    route walks (isolation matrix, HEAD) include ``GET /leaderboard/stream``."""
    return migrated_settings.model_copy(update={"stream_max_seconds": 0.05})


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def make_app(app: FastAPI, settings: Settings) -> AsyncIterator[AppFactory]:
    """More apps on this test's (emptied) database, with settings changed, e.g.
    ``make_app(rate_limit_enabled=True, rate_limit_reads="3/minute")``."""
    made: list[FastAPI] = []

    def factory(**changes: Any) -> FastAPI:
        other = create_app(settings.model_copy(update=changes))
        made.append(other)
        return other

    try:
        yield factory
    finally:
        for other in made:
            assert await drain(other.state.questline.cancelled_requests, grace=10)
            await other.state.questline.db.dispose()


def client_for(app: FastAPI, address: str = "127.0.0.1") -> httpx.AsyncClient:
    """A client of ``app`` from ``address`` that sees what a network client would: the
    500 response of a crash, not the exception Starlette re-raises for the server."""
    transport = httpx.ASGITransport(app=app, client=(address, 40000), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://questline.test")


Send = Callable[..., Awaitable[httpx.Response]]

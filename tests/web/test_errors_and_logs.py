"""What the service says when it breaks, and what it writes to its logs.

A throwaway database loses a table the service needs; every response must still be a
problem document with a request id, without a stack trace or SQL. And no log line, at
any level, of any request, succeeding or failing, may carry a bearer token.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import jwt
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from questline.app import create_app
from questline.config import Settings
from questline.logging_setup import make_handler
from questline.storage.migrate import upgrade
from questline.web.identity import Role
from tests.conftest import TEST_SETTINGS
from tests.factories import World, bearer
from tests.support.harness import AppHarness
from tests.support.postgres import PostgresServer
from tests.web.conftest import AppFactory, client_for

pytestmark = pytest.mark.anyio

LEAKS = ("Traceback", 'File "', "SELECT", "INSERT", "sqlalchemy", "asyncpg", "sqlite3", "teams")


@pytest.fixture
def throwaway_settings(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    """A database of its own at head, free to break."""
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.create_database(f"broken_{uuid.uuid4().hex[:12]}")
        settings = Settings(
            data_dir=tmp_path, database_url=url, database_row_security=False, **TEST_SETTINGS
        )
    else:
        settings = Settings(data_dir=tmp_path, **TEST_SETTINGS)
    upgrade(settings)
    return settings


@pytest.fixture
async def broken_app(throwaway_settings: Settings) -> AsyncIterator[FastAPI]:
    app = create_app(throwaway_settings)
    db = app.state.questline.db
    async with db.engine.begin() as connection:
        cascade = "" if db.is_sqlite else " CASCADE"
        await connection.execute(text(f"DROP TABLE teams{cascade}"))
    try:
        yield app
    finally:
        await db.dispose()


async def test_a_broken_database_gives_problems_without_internals(broken_app: FastAPI) -> None:
    tokens = AppHarness(broken_app).tokens
    admin = bearer(tokens.mint(role=Role.ADMIN, org_id=uuid.uuid4(), subject="admin"))
    async with client_for(broken_app) as client:
        responses = [
            await client.get("/team", headers=admin),
            await client.post("/team", json={"name": "Doomed"}, headers=admin),
            await client.get(f"/team/{uuid.uuid4()}", headers=admin),
        ]
    for response in responses:
        assert response.status_code in (500, 503), response.text
        assert response.headers["content-type"] == "application/problem+json"
        body = response.json()
        assert body["requestId"] == response.headers["X-Request-Id"]
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Cache-Control"] == "no-store"
        assert body["status"] == response.status_code
        for leak in LEAKS:
            assert leak not in response.text, (leak, response.text)


@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    """Everything every logger writes, at DEBUG, through the production JSON handler."""
    buffer = io.StringIO()
    handler = make_handler("json", buffer)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


def _expired(world: World, org_id: uuid.UUID) -> str:
    return world.tokens.mint(
        role=Role.ADMIN, org_id=org_id, subject="admin", lifetime=dt.timedelta(seconds=-3600)
    )


async def test_no_token_is_ever_written_to_the_logs(
    world: World,
    make_app: AppFactory,
    broken_app: FastAPI,
    captured_logs: io.StringIO,
) -> None:
    org = world.org()
    team = await org.create_team()
    forged = jwt.encode(
        {"sub": "x", "org": str(org.id), "role": "admin"}, "a-key-that-is-not-the-service-secret"
    )
    expired = _expired(world, org.id)
    broken_admin = AppHarness(broken_app).tokens.mint(
        role=Role.ADMIN, org_id=org.id, subject="admin"
    )
    limited = make_app(rate_limit_enabled=True, rate_limit_writes="1/minute")
    client = world.client
    statuses = [
        (await client.get("/team", headers=org.member)).status_code,
        (await client.post("/team", json={"name": "Logged"}, headers=org.admin)).status_code,
        (await client.post("/team", json={"nam": "x"}, headers=org.admin)).status_code,
        (await client.post("/team", json={"name": "No"}, headers=org.member)).status_code,
        (await client.get(f"/team/{uuid.uuid4()}", headers=org.admin)).status_code,
        (await client.get("/team", headers=bearer(forged))).status_code,
        (await client.get("/team", headers=bearer(expired))).status_code,
        (await client.get("/team", headers={"Authorization": "Bearer"})).status_code,
        (await client.post(f"/team/{team['Id']}/isadminteam", headers=org.admin)).status_code,
    ]
    async with client_for(limited) as other:
        for _ in range(2):
            body = {"name": f"Limited-{uuid.uuid4().hex[:6]}"}
            statuses.append((await other.post("/team", json=body, headers=org.admin)).status_code)
    async with client_for(broken_app) as broken:
        statuses.append((await broken.get("/team", headers=bearer(broken_admin))).status_code)
    assert statuses[:9] == [200, 201, 422, 403, 404, 401, 401, 401, 200]
    assert statuses[9:11] == [201, 429]
    assert statuses[11] in (500, 503)

    logs = captured_logs.getvalue()
    assert "unhandled error" in logs or "database unavailable" in logs  # the failure was logged
    assert '"status": 429' in logs  # access lines of every request are in the capture
    for token in (org.admin_token, org.member_token, forged, expired, broken_admin):
        for part in (token, token.split(".")[1], token.split(".")[2]):
            assert part not in logs
    assert "Bearer" not in logs
    assert "authorization" not in logs.lower()

"""A server killed with SIGKILL in the middle of a 10,000-team request: all or none.

PostgreSQL with a live server process: the request is sent, the test watches
``pg_stat_activity`` until the server's transaction is inserting rows, kills the server
with ``kill -9``, restarts it, and counts. The transaction either committed before the
kill (10,000 teams) or died with the connection (none); never anything in between. A
retry with the same ``Idempotency-Key`` then completes the job exactly once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
import uuid
from pathlib import Path

import asyncpg
import httpx
import pytest

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role
from tests.bulk.live import start_server
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres_only]

TEAMS = 10_000


def cohort_csv() -> bytes:
    rows = [f"Crash team {i:05d},person{i}@example.org,Person {i},cohort" for i in range(TEAMS)]
    return ("team,email,givenName,tags\r\n" + "\r\n".join(rows) + "\r\n").encode()


async def wait_for_inserts(dsn: str, database: str, sender: threading.Thread) -> str:
    """The first ``INSERT`` the server's transaction is running (or has just run)."""
    connection = await asyncpg.connect(dsn)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sender.is_alive():
            query = await connection.fetchval(
                "SELECT query FROM pg_stat_activity WHERE datname = $1 "
                "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL "
                "AND query ILIKE 'INSERT INTO %' LIMIT 1",
                database,
            )
            if query:
                return str(query)
            await asyncio.sleep(0.002)
        raise AssertionError("the request ended (or hung) before the server inserted")
    finally:
        await connection.close()


async def counts(dsn: str, org_id: uuid.UUID) -> tuple[int, int, int]:
    connection = await asyncpg.connect(dsn)
    try:
        row = await connection.fetchrow(
            "SELECT (SELECT count(*) FROM teams WHERE organization_id = $1),"
            " (SELECT count(*) FROM members WHERE organization_id = $1),"
            " (SELECT count(*) FROM team_members WHERE organization_id = $1)",
            org_id,
        )
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2])
    finally:
        await connection.close()


async def test_kill_9_in_the_middle_of_a_bulk_request_leaves_all_or_none(
    backend: str, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """Its own database and server process (``backend`` only selects PostgreSQL runs)."""
    database = f"crash_{uuid.uuid4().hex[:12]}"
    url = postgres_server.create_database(database)
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    settings = Settings(  # type: ignore[call-arg]
        data_dir=tmp_path / "data",
        database_url=url,
        database_row_security=False,  # the database's owner: one role
        jwt_secret="x" * 48,
        _env_file=None,
    )
    await asyncio.to_thread(upgrade, settings)
    org_id = uuid.uuid4()
    token = TokenService(settings).mint(role=Role.ADMIN, org_id=org_id, subject="crash")
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "text/csv",
        "Idempotency-Key": "cohort-upload",
    }
    body = cohort_csv()
    log = tmp_path / "server.log"

    server = await asyncio.to_thread(start_server, settings, log)
    outcome: dict[str, object] = {}

    def send() -> None:
        try:
            outcome["status"] = httpx.post(
                f"{server.url}/team/bulk", content=body, headers=headers, timeout=120
            ).status_code
        except httpx.HTTPError as exc:
            outcome["error"] = exc

    sender = threading.Thread(target=send)
    sender.start()
    try:
        seen = await wait_for_inserts(dsn, database, sender)
        os.kill(server.process.pid, signal.SIGKILL)
    finally:
        server.process.kill()
        server.process.wait(timeout=30)
        sender.join(timeout=60)
    assert seen.upper().startswith("INSERT INTO"), (outcome, server.log_text())
    assert "error" in outcome or outcome.get("status") == 201, outcome

    restarted = await asyncio.to_thread(start_server, settings, log)
    try:
        teams, members, memberships = await counts(dsn, org_id)
        assert (teams, members, memberships) in ((0, 0, 0), (TEAMS, TEAMS, TEAMS)), (
            teams,
            members,
            memberships,
        )
        async with httpx.AsyncClient(base_url=restarted.url, timeout=120) as client:
            listed = await client.get("/team", headers={"Authorization": headers["Authorization"]})
            assert listed.status_code == 200
            assert len(listed.json()) == teams
            # The client's retry after the crash completes the job exactly once.
            retried = await client.post("/team/bulk", content=body, headers=headers)
            assert retried.status_code == 201, retried.text[:500]
            assert len(retried.json()) == TEAMS
        assert await counts(dsn, org_id) == (TEAMS, TEAMS, TEAMS)
    finally:
        restarted.process.kill()
        restarted.process.wait(timeout=30)

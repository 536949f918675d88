"""Faults, against live ``questline serve`` processes on a PostgreSQL of their own.

* PostgreSQL stops while the service runs: readiness and requests answer 503 problem
  documents (never a traceback), liveness stays up; PostgreSQL comes back: the same
  process serves again, without a restart.
* Two processes on one database: what one writes the other reads, and an
  ``Idempotency-Key`` used on one is honoured on the other.

The PostgreSQL server here is not the suite's shared one, which must never stop.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role
from tests.conftest import BACKENDS, ROW_SECURITY
from tests.factories import bearer
from tests.support.live import LiveServer, database_env
from tests.support.postgres import PostgresServer, create_row_security_database

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres_only,
    pytest.mark.skipif("postgresql" not in BACKENDS, reason="PostgreSQL backend not selected"),
]

LEAKS = ("Traceback", 'File "', "SELECT", "sqlalchemy", "asyncpg", "OSError", "Errno")


class Deployment:
    """A PostgreSQL database, a token secret, and the server processes that share them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.postgres = PostgresServer().start()
        # Under QUESTLINE_TEST_ROW_SECURITY the processes connect as the service's role,
        # under the policies, as the in-process tests do: these faults (a reconnect, an
        # idempotency key raced across processes) must hold there too.
        owner_url: str | None = None
        if ROW_SECURITY:
            owner_url, url = create_row_security_database(self.postgres)
        else:
            url = self.postgres.create_database("questline_faults")
        self.secret = secrets.token_urlsafe(32)
        settings = Settings(
            data_dir=root / "data",
            database_url=url,
            database_owner_url=owner_url,
            database_row_security=owner_url is not None,
            jwt_secret=self.secret,
            _env_file=None,  # type: ignore[call-arg]
        )
        upgrade(settings)
        self.database = database_env(settings)
        self.tokens = TokenService(settings)
        self.servers: list[LiveServer] = []

    def server(self, **extra: str) -> LiveServer:
        env = {
            **self.database,
            "QUESTLINE_DATA_DIR": str(self.root / "data"),
            "QUESTLINE_JWT_SECRET": self.secret,
            "QUESTLINE_LOG_LEVEL": "DEBUG",
            **extra,
        }
        log = self.root / f"server-{len(self.servers)}.log"
        server = LiveServer(env=env, log_path=log).start()
        self.servers.append(server)
        return server

    def admin(self, org_id: uuid.UUID) -> dict[str, str]:
        return bearer(self.tokens.mint(role=Role.ADMIN, org_id=org_id, subject="admin"))

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        self.postgres.cleanup()


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    made = Deployment(tmp_path)
    try:
        yield made
    finally:
        made.close()


def _assert_clean_problem(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == status
    assert response.headers.get("Retry-After")
    for leak in LEAKS:
        assert leak not in response.text, (leak, response.text)


def _wait_for(check: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


def test_postgres_down_gives_503_and_back_serves_again_without_restart(
    deployment: Deployment,
) -> None:
    server = deployment.server()
    pid = server.process.pid if server.process else None
    admin = deployment.admin(uuid.uuid4())
    with httpx.Client(base_url=server.url, timeout=30) as client:
        created = client.post("/team", json={"name": "Survivor"}, headers=admin)
        assert created.status_code == 201, created.text
        assert client.get("/readyz").status_code == 200

        deployment.postgres.stop()
        _assert_clean_problem(client.get("/readyz"), 503)
        _assert_clean_problem(client.get("/team", headers=admin), 503)
        _assert_clean_problem(client.post("/team", json={"name": "Lost"}, headers=admin), 503)
        team_url = f"/team/{created.json()['Id']}"
        _assert_clean_problem(client.get(team_url, headers=admin), 503)
        assert client.get("/healthz").status_code == 200  # alive, only not ready

        deployment.postgres.start_server()
        _wait_for(lambda: client.get("/readyz").status_code == 200)
        listed = client.get("/team", headers=admin)
        assert listed.status_code == 200, listed.text
        assert [t["Name"] for t in listed.json()] == ["Survivor"]
        assert client.post("/team", json={"name": "After"}, headers=admin).status_code == 201
    assert server.alive
    assert server.process is not None
    assert server.process.pid == pid
    logs = server.logs()
    assert "database unavailable" in logs
    assert admin["Authorization"].split()[1] not in logs
    assert "Bearer" not in logs


def test_two_processes_share_writes_and_idempotency_keys(deployment: Deployment) -> None:
    first, second = deployment.server(), deployment.server()
    org_id = uuid.uuid4()
    admin = deployment.admin(org_id)
    with (
        httpx.Client(base_url=first.url, timeout=30) as a,
        httpx.Client(base_url=second.url, timeout=30) as b,
    ):
        created = a.post("/team", json={"name": "Shared"}, headers=admin)
        assert created.status_code == 201
        read = b.get(f"/team/{created.json()['Id']}", headers=admin)
        assert read.status_code == 200
        assert read.json()["Name"] == "Shared"

        keyed = {**admin, "Idempotency-Key": "create-once"}
        original = a.post("/team", json={"name": "Once"}, headers=keyed)
        replayed = b.post("/team", json={"name": "Once"}, headers=keyed)
        assert original.status_code == 201
        assert replayed.status_code == 201
        assert replayed.headers["Idempotent-Replayed"] == "true"
        assert "Idempotent-Replayed" not in original.headers
        assert replayed.json() == original.json()
        assert replayed.headers["Location"] == original.headers["Location"]
        other_body = b.post("/team", json={"name": "Twice"}, headers=keyed)
        assert other_body.status_code == 422

        switch = {**admin, "Idempotency-Key": "switch-once"}
        team_url = f"/team/{created.json()['Id']}/isadminteam"
        flipped = [a.post(team_url, headers=switch), b.post(team_url, headers=switch)]
        assert [r.json()["IsAdminTeam"] for r in flipped] == [True, True]  # flipped once

        names = [t["Name"] for t in a.get("/team", headers=admin).json()]
        assert names == ["Once", "Shared"]
        assert b.get(f"/team/{created.json()['Id']}", headers=admin).json()["IsAdminTeam"]


def test_one_key_sent_to_both_processes_at_once_creates_one_team(
    deployment: Deployment,
) -> None:
    first, second = deployment.server(), deployment.server()
    admin = deployment.admin(uuid.uuid4())
    rounds = 15

    def post(url: str, key: str) -> httpx.Response:
        headers = {**admin, "Idempotency-Key": key}
        return httpx.post(f"{url}/team", json={"name": f"Race {key}"}, headers=headers, timeout=30)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for index in range(rounds):
            key = f"race-{index}"
            results = list(pool.map(post, [first.url, second.url], [key, key]))
            assert sorted(r.status_code for r in results) == [201, 201], [r.text for r in results]
            assert results[0].json()["Id"] == results[1].json()["Id"]
            replays = [r.headers.get("Idempotent-Replayed") for r in results]
            assert sorted(replays, key=str) == [None, "true"], replays
    with httpx.Client(base_url=first.url, timeout=30) as client:
        teams = client.get("/team", headers=admin).json()
    assert len(teams) == rounds

"""``GET /team`` of a large organization against a live server: sent with chunked
transfer encoding, the same list as the paged reads, while ``/healthz`` on the same
worker keeps answering (the probe pattern and bound of tests/web/test_event_loop.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from sqlalchemy import insert

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.organizations.service import ensure_organization
from questline.readmodel.versions import bump
from questline.storage.db import Database
from questline.storage.migrate import upgrade
from questline.teams.models import Team
from questline.web.identity import Role
from tests.support.live import LiveServer
from tests.web.test_event_loop import BOUND, LOAD_FACTOR, _idle_p99, _p99, _probe_while

pytestmark = pytest.mark.slow

TEAMS = 20_000


async def _seed(settings: Settings, org: uuid.UUID) -> None:
    """The teams written set-based (one multi-row insert), as bench/dataset.py does."""
    db = Database(settings)
    now = dt.datetime.now(dt.UTC)
    try:
        async with db.session() as session:
            await ensure_organization(session, org)
        async with db.session() as session:
            await session.execute(
                insert(Team),
                [
                    {
                        "organization_id": org,
                        "id": uuid.uuid4(),
                        "name": f"Live {n:06d}",
                        "name_key": f"live {n:06d}",
                        "status": "Active",
                        "tags": ["x"],
                        "score": n % 101,
                        "tasks_completed": 0,
                        "score_reached_at": now,
                        "is_survey_completed": False,
                        "is_admin_team": False,
                        "is_ranked": True,
                        "created_at": now,
                        "updated_at": now,
                        "version": 1,
                    }
                    for n in range(TEAMS)
                ],
            )
            await bump(session, org)
    finally:
        await db.dispose()


class Deployment:
    def __init__(self, root: Path) -> None:
        secret = secrets.token_urlsafe(32)
        settings = Settings(
            data_dir=root / "data",
            jwt_secret=secret,
            _env_file=None,  # type: ignore[call-arg]
        )
        upgrade(settings)
        self.org = uuid.uuid4()
        asyncio.run(_seed(settings, self.org))
        token = TokenService(settings).mint(role=Role.MEMBER, org_id=self.org, subject="m")
        self.headers = {"Authorization": f"Bearer {token}"}
        env = {
            "QUESTLINE_DATA_DIR": str(root / "data"),
            "QUESTLINE_JWT_SECRET": secret,
            "QUESTLINE_RATE_LIMIT_ENABLED": "false",
            "QUESTLINE_LOG_LEVEL": "WARNING",
        }
        self.server = LiveServer(env=env, log_path=root / "server.log").start()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    made = Deployment(tmp_path_factory.mktemp("stream"))
    try:
        yield made
    finally:
        made.server.stop()


def test_a_large_team_list_is_chunked_and_healthz_stays_fast(deployment: Deployment) -> None:
    url = deployment.server.url
    bound = max(BOUND, LOAD_FACTOR * _idle_p99(deployment.server))
    chunks: list[int] = []
    headers: dict[str, str] = {}

    def whole_list() -> httpx.Response:
        with httpx.Client(timeout=120) as client:
            with client.stream("GET", f"{url}/team", headers=deployment.headers) as response:
                headers.update(response.headers)
                body = b""
                for chunk in response.iter_raw():
                    chunks.append(len(chunk))
                    body += chunk
            return httpx.Response(response.status_code, content=body)

    latencies, response = _probe_while(deployment.server, whole_list)
    assert response.status_code == 200
    assert headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in headers
    assert "etag" in headers
    teams = orjson.loads(response.content)
    assert len(teams) == TEAMS
    assert [t["Name"] for t in teams] == [f"Live {n:06d}" for n in range(TEAMS)]
    assert len(chunks) > 1
    # The same items as the paged reads.
    with httpx.Client(base_url=url, timeout=60) as client:
        page = client.get("/team?limit=1000", headers=deployment.headers).json()
    assert teams[:1000] == page
    if len(latencies) >= 20:
        p99 = _p99(latencies)
        assert p99 < bound, f"/healthz p99 {p99 * 1000:.0f} ms while the list streamed"

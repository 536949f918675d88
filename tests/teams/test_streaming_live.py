"""``GET /team`` of a large organization against a live server: sent with chunked
transfer encoding, the same list as the paged reads, sent as it is read (the client has
the first chunk while the rest is still to come, and the same worker answers
``/healthz`` in between), the loop doing a bounded amount of work per stretch (the
loop-slice probe of tests/web/loop_probe, CPU time, not latency)."""

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
from tests.web import loop_probe
from tests.web.test_event_loop import probe_while

pytestmark = pytest.mark.slow

TEAMS = 20_000


async def _seed(settings: Settings, org: uuid.UUID) -> None:
    """The teams written set-based (one multi-row insert), as bench/dataset/seed.py does."""
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
        self.probe = root / "loop.txt"
        env = {
            "QUESTLINE_DATA_DIR": str(root / "data"),
            "QUESTLINE_JWT_SECRET": secret,
            "QUESTLINE_RATE_LIMIT_ENABLED": "false",
            "QUESTLINE_LOG_LEVEL": "WARNING",
            **loop_probe.env(self.probe),
        }
        self.server = LiveServer(env=env, log_path=root / "server.log").start()
        assert loop_probe.loaded(self.probe), "the server did not load the loop probe"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    made = Deployment(tmp_path_factory.mktemp("stream"))
    try:
        yield made
    finally:
        made.server.stop()


def test_a_large_team_list_is_chunked_sent_as_read_and_the_loop_stays_free(
    deployment: Deployment,
) -> None:
    url = deployment.server.url
    chunks: list[int] = []
    headers: dict[str, str] = {}
    between: list[int] = []
    """``/healthz`` statuses answered after the first chunk, before the last one."""

    def whole_list() -> httpx.Response:
        with (
            httpx.Client(timeout=120) as client,
            httpx.Client(base_url=url, timeout=120) as other,
            client.stream("GET", f"{url}/team", headers=deployment.headers) as response,
        ):
            headers.update(response.headers)
            body = b""
            for chunk in response.iter_raw():
                if not chunks:
                    # The list has begun and is not over: the worker answers others.
                    between.append(other.get("/healthz").status_code)
                chunks.append(len(chunk))
                body += chunk
        return httpx.Response(response.status_code, content=body)

    with loop_probe.watching(deployment.probe) as window:
        statuses, response = probe_while(deployment.server, whole_list)
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
    assert between == [200]
    assert set(statuses) <= {200}, statuses
    # 20,000 teams built and serialized at once held the loop for seconds of CPU.
    assert window.longest < loop_probe.SLICE_BOUND, (
        f"the loop ran {window.longest * 1000:.0f} ms of CPU in one stretch while the "
        f"list streamed (stretches of 2 ms or more: {sorted(window.slices)[-10:]})"
    )

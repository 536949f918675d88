"""Live server processes: a committed completion survives a crash, and the restarted
process's dispatchers (the outbox's fan-out, then the statements') deliver it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from questline.config import Settings
from tests.factories import World
from tests.progress.factories import at, make_discipline
from tests.support.harness import AppHarness
from tests.support.live import LiveServer, database_env
from tests.support.ralph_lrs import RalphServer, RalphUser

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def live_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {
        "QUESTLINE_DATA_DIR": str(settings.data_dir.resolve()),
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_PUBLIC_URL": settings.public_url,
        "QUESTLINE_XAPI_ALLOW_PRIVATE_URLS": "true",
        "QUESTLINE_XAPI_RETRY_BASE_SECONDS": "0.2",
        "QUESTLINE_XAPI_POLL_SECONDS": "0.2",
        "QUESTLINE_WEBHOOKS_POLL_SECONDS": "0.2",
        **extra,
    }
    env.update(database_env(settings))
    return env


def wait_for_statements(
    ralph: RalphServer, user: RalphUser, count: int, timeout: float = 300
) -> list[dict[str, Any]]:
    """At least ``count`` statements (a deadline to fail on, not a timed assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = ralph.statements(user)
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"expected {count} statements, the LRS has {len(found)}")


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


async def test_a_committed_completion_reaches_the_lrs_after_a_crash_and_restart(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
    servers: list[LiveServer],
    tmp_path: Path,
) -> None:
    org = world.org()
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[7, 1]]])
    first = LiveServer(
        env=live_env(
            settings,
            QUESTLINE_WEBHOOKS_DISPATCHER_ENABLED="false",
            QUESTLINE_XAPI_DISPATCHER_ENABLED="false",
        ),
        log_path=tmp_path / "first.log",
    )
    servers.append(first.start())
    async with httpx.AsyncClient(base_url=first.url, headers=org.admin) as client:
        lrs = await client.put(
            "/organization/xapi",
            json={
                "Endpoint": ralph.endpoint,
                "Username": lrs_user.username,
                "Password": lrs_user.password,
            },
        )
        assert lrs.status_code == 201, lrs.text
        team = (await client.post("/team", json={"name": "Survivors"})).json()
        done = await client.post(
            f"/team/{team['Id']}/progress", json={"TaskId": tree.tasks[0], "CompletedAt": at(1)}
        )
        assert done.status_code == 201, done.text
    assert first.process is not None
    first.process.kill()  # no clean shutdown: only what was committed remains
    first.process.wait()
    assert ralph.statements(lrs_user) == []

    second = LiveServer(env=live_env(settings), log_path=tmp_path / "second.log")
    servers.append(second.start())
    [statement] = wait_for_statements(ralph, lrs_user, 1)
    assert statement["object"]["id"].endswith(f"/task/{tree.tasks[0]}")
    assert statement["actor"]["name"] == "Survivors"

    # A completion while it runs arrives without a restart (woken by the commit).
    async with httpx.AsyncClient(base_url=second.url, headers=org.admin) as client:
        done = await client.post(f"/team/{team['Id']}/progress", json={"TaskId": tree.tasks[1]})
        assert done.status_code == 201, done.text
    found = wait_for_statements(ralph, lrs_user, 4)  # the task, the level, the discipline
    assert len(found) == 4

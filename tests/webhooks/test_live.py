"""Delivery by live server processes: a committed event survives a crash and a restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from standardwebhooks.webhooks import Webhook as Verifier

from questline.config import Settings
from tests.factories import World
from tests.support.live import LiveServer, database_env
from tests.webhooks.receiver import Receiver

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def live_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {
        "QUESTLINE_DATA_DIR": str(settings.data_dir.resolve()),
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_WEBHOOKS_ALLOW_PRIVATE_URLS": "true",
        "QUESTLINE_WEBHOOKS_RETRY_BASE_SECONDS": "0.2",
        "QUESTLINE_WEBHOOKS_POLL_SECONDS": "0.2",
        **extra,
    }
    env.update(database_env(settings))
    return env


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


async def test_a_committed_event_is_delivered_after_a_crash_and_restart(
    world: World,
    settings: Settings,
    hook_receiver: Receiver,
    servers: list[LiveServer],
    tmp_path: Path,
) -> None:
    org = world.org()
    first = LiveServer(
        env=live_env(settings, QUESTLINE_WEBHOOKS_DISPATCHER_ENABLED="false"),
        log_path=tmp_path / "first.log",
    )
    servers.append(first.start())
    async with httpx.AsyncClient(base_url=first.url, headers=org.admin) as client:
        hook = await client.post(
            "/webhook", json={"url": hook_receiver.url, "events": ["team.created"]}
        )
        assert hook.status_code == 201, hook.text
        team = await client.post("/team", json={"name": "Survivors"})
        assert team.status_code == 201
    assert first.process is not None
    first.process.kill()  # no clean shutdown: only what was committed remains
    first.process.wait()
    assert hook_receiver.requests == []

    second = LiveServer(env=live_env(settings), log_path=tmp_path / "second.log")
    servers.append(second.start())
    [received] = hook_receiver.wait_for(1)
    payload = Verifier(hook.json()["Secret"]).verify(received.body, received.headers)
    assert payload["data"] == team.json()


async def test_a_live_server_delivers_at_once_and_retries_with_the_same_id(
    world: World,
    settings: Settings,
    hook_receiver: Receiver,
    servers: list[LiveServer],
    tmp_path: Path,
) -> None:
    org = world.org()
    server = LiveServer(env=live_env(settings), log_path=tmp_path / "server.log")
    servers.append(server.start())
    hook_receiver.answers = [502]
    async with httpx.AsyncClient(base_url=server.url, headers=org.admin) as client:
        hook = await client.post(
            "/webhook", json={"url": hook_receiver.url, "events": ["team.created"]}
        )
        created = await client.post("/team", json={"name": "Live"})
        assert created.status_code == 201
        requests = hook_receiver.wait_for(2)
        assert requests[0].headers["webhook-id"] == requests[1].headers["webhook-id"]
        for request in requests:
            Verifier(hook.json()["Secret"]).verify(request.body, request.headers)

"""A live server process: mail queued and committed survives a crash and goes out after
the restart; a live sender sends at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from questline.config import Settings
from tests.factories import World
from tests.mail.conftest import MAIL_FROM
from tests.mail.smtp_server import Mailbox
from tests.support.live import LiveServer, database_env
from tests.support.postgres import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def live_env(settings: Settings, mailbox: Mailbox, port: int, **extra: str) -> dict[str, str]:
    env = {
        "QUESTLINE_DATA_DIR": str(settings.data_dir.resolve()),
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_SMTP_URL": mailbox.url(),
        "QUESTLINE_MAIL_FROM": MAIL_FROM,
        "QUESTLINE_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "QUESTLINE_MAIL_POLL_SECONDS": "0.2",
        "QUESTLINE_MAIL_RETRY_BASE_SECONDS": "0.2",
        **extra,
    }
    env.update(database_env(settings))
    return env


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


async def test_a_committed_sign_in_link_is_sent_after_a_crash_and_restart(
    world: World,
    settings: Settings,
    mailbox: Mailbox,
    servers: list[LiveServer],
    tmp_path: Path,
) -> None:
    org = world.org()
    port = free_port()
    first = LiveServer(
        env=live_env(settings, mailbox, port, QUESTLINE_MAIL_DISPATCHER_ENABLED="false"),
        log_path=tmp_path / "first.log",
        port=port,
    )
    servers.append(first.start())
    async with httpx.AsyncClient(base_url=first.url, headers=org.admin) as client:
        team = await client.post("/team", json={"name": "Survivors"})
        added = await client.post(
            f"/team/{team.json()['Id']}/members",
            json={"email": "ada@example.org", "givenName": "Ada"},
        )
        assert added.status_code == 201
        asked = await client.post(
            "/auth/signin-link", json={"OrganizationId": str(org.id), "Email": "ada@example.org"}
        )
        assert asked.status_code == 202
    assert first.process is not None
    first.process.kill()  # no clean shutdown: only what was committed remains
    first.process.wait()
    assert mailbox.messages() == []

    second = LiveServer(
        env=live_env(settings, mailbox, port), log_path=tmp_path / "second.log", port=port
    )
    servers.append(second.start())
    [mail] = mailbox.wait_for(1)
    assert mail.recipients == ["ada@example.org"]
    assert mail.link.startswith(f"{second.url}/ui/#code=")
    async with httpx.AsyncClient(base_url=second.url) as browser:
        signed_in = await browser.post("/auth/session", json={"Code": mail.code})
        assert signed_in.status_code == 201, signed_in.text
        assert (await browser.get("/auth/session")).json()["Email"] == "ada@example.org"

    # The running sender is woken by the commit: an invitation goes out at once.
    async with httpx.AsyncClient(base_url=second.url, headers=org.admin) as client:
        invited = await client.post(f"/member/{added.json()['Id']}/invite")
        assert invited.status_code == 202
    mailbox.wait_for(2)

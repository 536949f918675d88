"""``GET /leaderboard/stream`` on live server processes: the first event is the
leaderboard, changes follow (through another process on PostgreSQL), heartbeats,
``Last-Event-ID`` and the caps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from questline.config import Settings
from tests.factories import Org, World
from tests.support.live import LiveServer, database_env
from tests.support.sse import SseReader

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DOCUMENT = {
    "Title": "Stream",
    "Description": "x",
    "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [
        {"Title": "A", "Points": 10}, {"Title": "B", "Points": 5}, {"Title": "C", "Points": 1}
    ]}]}],
}  # fmt: skip


def live_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {
        "QUESTLINE_DATA_DIR": str(settings.data_dir.resolve()),
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_STREAM_HEARTBEAT_SECONDS": "0.3",
        "QUESTLINE_WEBHOOKS_DISPATCHER_ENABLED": "false",
        **extra,
    }
    env.update(database_env(settings))  # the URL, and the row-security settings
    return env


@pytest.fixture(scope="module")
def servers(
    migrated_settings: Settings, tmp_path_factory: pytest.TempPathFactory, backend: str
) -> Iterator[list[LiveServer]]:
    """Two processes on PostgreSQL; one on SQLite (its serve command runs one). Shared by
    the module's tests: each acts in organizations of its own."""
    started: list[LiveServer] = []
    logs = tmp_path_factory.mktemp(f"streams-{backend}")
    try:
        for index in range(2 if backend == "postgresql" else 1):
            server = LiveServer(env=live_env(migrated_settings), log_path=logs / f"s{index}.log")
            started.append(server.start())
        yield started
    finally:
        for server in started:
            server.stop()


@asynccontextmanager
async def open_stream(
    url: str, headers: dict[str, str], **params: Any
) -> AsyncIterator[tuple[httpx.Response, SseReader]]:
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as client,
        client.stream("GET", "/leaderboard/stream", params=params, headers=headers) as response,
    ):
        yield response, SseReader(response)


async def setup_org(url: str, org: Org) -> tuple[list[dict[str, Any]], list[str]]:
    async with httpx.AsyncClient(base_url=url, headers=org.admin) as client:
        created = await client.post("/discipline", json=DOCUMENT)
        assert created.status_code == 201, created.text
        tasks = [t["Id"] for t in created.json()["Levels"][0]["Quests"][0]["Tasks"]]
        teams = []
        for name in ("Ants", "Bees"):
            team = await client.post("/team", json={"name": name})
            assert team.status_code == 201
            teams.append(team.json())
    return teams, tasks


async def leaderboard(url: str, org: Org, **params: Any) -> Any:
    async with httpx.AsyncClient(base_url=url, headers=org.member) as client:
        response = await client.get("/leaderboard", params=params)
        assert response.status_code == 200
        return response.json()


async def complete(url: str, org: Org, team_id: str, task_id: str) -> None:
    async with httpx.AsyncClient(base_url=url, headers=org.admin) as client:
        response = await client.post(f"/team/{team_id}/progress", json={"TaskId": task_id})
        assert response.status_code == 201, response.text


async def test_a_change_through_one_process_reaches_a_stream_on_another(
    world: World, servers: list[LiveServer]
) -> None:
    org = world.org()
    reader_url, writer_url = servers[0].url, servers[-1].url
    teams, tasks = await setup_org(writer_url, org)
    async with open_stream(reader_url, org.member, limit=10) as (response, sse):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        first = await sse.event()
        assert first.event == "leaderboard"
        assert first.json() == await leaderboard(reader_url, org, limit=10)
        await complete(writer_url, org, teams[1]["Id"], tasks[0])
        changed = await sse.event()
        assert changed.id is not None
        assert first.id is not None
        assert int(changed.id) > int(first.id)
        assert changed.json() == await leaderboard(reader_url, org, limit=10)
        assert changed.json()[0]["Name"] == "Bees"
        assert changed.json()[0]["Score"] == 10


async def test_idle_streams_get_heartbeats(world: World, servers: list[LiveServer]) -> None:
    org = world.org()
    await setup_org(servers[0].url, org)
    async with open_stream(servers[0].url, org.member) as (_, sse):
        await sse.event()
        beat = await sse.message()
        assert beat.comments == ["heartbeat"]
        assert beat.event is None


async def test_last_event_id_resumes_without_a_repeat(
    world: World, servers: list[LiveServer]
) -> None:
    org = world.org()
    url = servers[0].url
    teams, tasks = await setup_org(url, org)
    async with open_stream(url, org.member) as (_, sse):
        first = await sse.event()
    assert first.id is not None
    headers = {**org.member, "Last-Event-ID": first.id}
    async with open_stream(url, headers) as (_, sse):
        await complete(url, org, teams[0]["Id"], tasks[1])
        resumed = await sse.event()
        assert int(resumed.id or 0) > int(first.id)
        assert resumed.json()[0]["Name"] == "Ants"
    stale = {**org.member, "Last-Event-ID": first.id}
    async with open_stream(url, stale) as (_, sse):
        caught_up = await sse.event()  # changed since: the current one at once
        assert caught_up.json() == await leaderboard(url, org)


async def test_a_discipline_stream_follows_that_ranking_only(
    world: World, servers: list[LiveServer]
) -> None:
    org, other = world.org(), world.org()
    url = servers[0].url
    teams, tasks = await setup_org(url, org)
    async with httpx.AsyncClient(base_url=url, headers=org.admin) as client:
        discipline_id = (await client.get("/discipline")).json()[0]["Id"]
    async with open_stream(url, org.member, discipline=discipline_id, limit=1) as (_, sse):
        first = await sse.event()
        assert first.json() == await leaderboard(url, org, discipline=discipline_id, limit=1)
        await complete(url, org, teams[1]["Id"], tasks[2])
        changed = await sse.event()
        assert changed.json() == await leaderboard(url, org, discipline=discipline_id, limit=1)
    async with open_stream(url, other.member, discipline=discipline_id) as (response, _):
        assert response.status_code == 404
    async with open_stream(url, {}) as (response, _):
        assert response.status_code == 401


async def test_streams_are_capped_per_organization(
    world: World, settings: Settings, tmp_path: Path
) -> None:
    org, other = world.org(), world.org()
    env = live_env(
        settings,
        QUESTLINE_STREAM_MAX_PER_ORGANIZATION="2",
        QUESTLINE_STREAM_MAX_PER_PROCESS="3",
    )
    server = LiveServer(env=env, log_path=tmp_path / "capped.log").start()
    try:
        url = server.url
        async with (
            open_stream(url, org.member) as (_, sse_a),
            open_stream(url, org.member) as (_, sse_b),
        ):
            await sse_a.event()
            await sse_b.event()
            async with open_stream(url, org.member) as (third, _):
                assert third.status_code == 503
                assert third.headers["retry-after"]
                assert third.headers["content-type"] == "application/problem+json"
            async with open_stream(url, other.member) as (_, sse_c):
                await sse_c.event()
                async with open_stream(url, other.member) as (fourth, _):
                    assert fourth.status_code == 503  # the process is full
                    assert fourth.headers["retry-after"]
        # The server gives a slot back when its loop reads the client's disconnect, which
        # can come after the client's close returns: retry the 503, as Retry-After asks.
        for _ in range(300):
            async with open_stream(url, org.member) as (again, sse):
                if again.status_code != 503:
                    assert again.status_code == 200
                    await sse.event()
                    break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("closed streams never gave their slots back")
    finally:
        server.stop()

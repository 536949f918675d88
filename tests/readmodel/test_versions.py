"""The read model's versions: bumped by every write, known at commit, seen across processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import text

from questline.config import Settings
from questline.readmodel.sources import PostgresSource
from questline.readmodel.versions import bump, read_version
from tests.factories import Org, World, bearer
from tests.progress.factories import make_discipline
from tests.support.harness import AppHarness
from tests.support.live import inherited_env

pytestmark = pytest.mark.anyio


async def _version(state: AppHarness, org: Org) -> int:
    async with state.db.session(write=False) as session:
        return await read_version(session, org.id)


async def _changes(state: AppHarness, org: Org, action: Any) -> int:
    """How much the organization's committed version grew during ``action``."""
    before = await _version(state, org)
    await action()
    return await _version(state, org) - before


async def test_every_write_that_changes_a_read_bumps_the_version(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    client = world.client
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 20]]])
    team: dict[str, Any] = {}

    async def create() -> None:
        team.update(await org.create_team("Rockets"))

    async def ok(method: str, url: str, **kwargs: Any) -> None:
        response = await client.request(method, url, headers=org.admin, **kwargs)
        assert response.status_code < 300, response.text

    assert await _changes(app_state, org, create) == 1
    tid = team["Id"]
    writes = [
        ("POST", f"/team/{tid}/progress", {"json": {"TaskId": tree.task(0, 0, 0)}}),
        ("DELETE", f"/team/{tid}/progress/{tree.task(0, 0, 0)}", {}),
        ("POST", f"/team/{tid}/isadminteam", {}),
        ("PATCH", f"/team/{tid}", {"json": {"Name": "Renamed"}}),
        ("PATCH", f"/team/{tid}", {"json": {"Tags": ["x"]}}),
        ("PATCH", f"/team/{tid}", {"json": {"Status": "Archived"}}),
        ("PATCH", f"/team/{tid}", {"json": {"Status": "Active"}}),
        ("POST", f"/team/{tid}/survey", {}),
        ("POST", f"/team/{tid}/members", {"json": {"Email": "a@example.org", "GivenName": "A"}}),
        ("POST", "/team/bulk", {"json": [{"Name": "Bulk one"}, {"Name": "Bulk two"}]}),
    ]
    for method, url, kwargs in writes:

        async def write(method: str = method, url: str = url, kwargs: Any = kwargs) -> None:
            await ok(method, url, **kwargs)

        assert await _changes(app_state, org, write) == 1, (method, url)

    members = (await client.get(f"/team/{tid}/members", headers=org.admin)).json()

    async def remove_member() -> None:
        await ok("DELETE", f"/team/{tid}/members/{members[0]['Id']}")

    assert await _changes(app_state, org, remove_member) == 1

    async def delete() -> None:
        await ok("DELETE", f"/team/{tid}")

    assert await _changes(app_state, org, delete) == 1


async def test_a_read_or_a_refused_write_bumps_nothing(world: World, app_state: AppHarness) -> None:
    org = world.org()
    team = await org.create_team("Rockets")

    async def reads_and_refusals() -> None:
        assert (await world.client.get("/leaderboard", headers=org.member)).status_code == 200
        assert (await world.client.get(f"/team/{team['Id']}", headers=org.member)).is_success
        refused = await world.client.post("/team", json={"Name": "ROCKETS"}, headers=org.admin)
        assert refused.status_code == 409
        missing = {"TaskId": str(uuid.uuid4())}
        refused = await world.client.post(
            f"/team/{team['Id']}/progress", json=missing, headers=org.admin
        )
        assert refused.status_code == 404

    assert await _changes(app_state, org, reads_and_refusals) == 0


async def test_a_global_discipline_change_bumps_every_organization(
    world: World, app_state: AppHarness
) -> None:
    first, second = world.org(), world.org()
    await first.create_team()
    await second.create_team()
    operator = bearer(world.operator_token())
    before = [await _version(app_state, o) for o in (first, second)]
    response = await world.client.post(
        "/discipline",
        json={"Title": "Global", "Description": "d", "Color": "Purple"},
        headers=operator,
    )
    assert response.status_code == 201, response.text
    after = [await _version(app_state, o) for o in (first, second)]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1]
    # The writer's own process forgot what it knew: the next read asks the database.
    assert await app_state.readmodel.version(first.id) == after[0]


async def test_the_writer_knows_its_version_when_the_commit_returns(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    await org.create_team()
    committed = await _version(app_state, org)
    assert app_state.readmodel.changes.known(org.id) == committed
    async with app_state.db.session() as session:
        bumped = await bump(session, org.id)
        # Not committed yet: not known.
        assert app_state.readmodel.changes.known(org.id) == committed
    assert bumped == committed + 1
    assert app_state.readmodel.changes.known(org.id) == bumped


async def test_a_rolled_back_bump_is_never_known(world: World, app_state: AppHarness) -> None:
    org = world.org()
    await org.create_team()
    committed = await _version(app_state, org)

    async def failing_write() -> None:
        async with app_state.db.session() as session:
            await bump(session, org.id)
            raise RuntimeError("the write fails after the bump")

    with pytest.raises(RuntimeError):
        await failing_write()
    assert await _version(app_state, org) == committed
    assert await app_state.readmodel.version(org.id) == committed


async def test_another_app_instance_sees_a_commit(
    world: World, app_state: AppHarness, other_app: FastAPI
) -> None:
    org = world.org()
    await org.create_team()
    other = AppHarness(other_app)
    seen = await other.readmodel.version(org.id)
    assert seen == await _version(app_state, org)
    async with app_state.db.session() as session:
        bumped = await bump(session, org.id)
    # SQLite: the next read checks PRAGMA data_version. PostgreSQL: the notification
    # arrives, or the read's confirmation round trip delivers it; wait() returns at once
    # when it has.
    assert await other.readmodel.changes.wait(org.id, seen, timeout=10) == bumped
    assert await other.readmodel.version(org.id) == bumped


async def test_another_process_commit_is_seen(
    world: World, app_state: AppHarness, settings: Settings
) -> None:
    org = world.org()
    await org.create_team()
    seen = await app_state.readmodel.version(org.id)
    assert seen is not None
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "tests.readmodel.writer", str(org.id)],
        env=inherited_env(settings),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    bumped = int(result.stdout.strip())
    assert bumped == seen + 1
    assert await app_state.readmodel.changes.wait(org.id, seen, timeout=10) == bumped
    if app_state.db.is_sqlite:
        # No waiting needed: every read checks the file's data version.
        assert await app_state.readmodel.version(org.id) == bumped


async def test_wait_returns_the_same_version_on_timeout(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    await org.create_team()
    seen = await app_state.readmodel.version(org.id)
    assert seen is not None
    assert await app_state.readmodel.changes.wait(org.id, seen, timeout=0.01) == seen


async def test_wait_wakes_on_a_commit_in_this_process(world: World, app_state: AppHarness) -> None:
    org = world.org()
    await org.create_team()
    seen = await app_state.readmodel.version(org.id)
    assert seen is not None
    waiting = asyncio.create_task(app_state.readmodel.changes.wait(org.id, seen, timeout=30))
    await asyncio.sleep(0)
    await org.create_team()
    assert await waiting == seen + 1


@pytest.mark.postgres_only
async def test_a_lost_listening_connection_never_serves_an_old_version(
    world: World, app_state: AppHarness, other_app: FastAPI
) -> None:
    org = world.org()
    await org.create_team()
    other = AppHarness(other_app)
    assert await other.readmodel.version(org.id) is not None
    source = other.readmodel.source
    assert isinstance(source, PostgresSource)
    assert source.healthy
    # Kill the listening backend, then commit: the notification is lost with it.
    pid = source.server_pid
    assert pid is not None
    async with app_state.db.engine.connect() as connection:
        killed = await connection.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        await connection.commit()
    assert killed
    async with app_state.db.session() as session:
        bumped = await bump(session, org.id)
    # Whether or not the loss has been noticed yet, the version read is the committed one:
    # a dead connection fails its confirmation round trip and the read goes to the pool.
    await asyncio.sleep(0.1)
    assert await other.readmodel.version(org.id) == bumped
    # And it reconnects.
    for _ in range(200):
        if source.healthy and source.reconnects >= 2:
            break
        await asyncio.sleep(0.05)
    assert source.healthy
    assert source.reconnects >= 2
    async with app_state.db.session() as session:
        again = await bump(session, org.id)
    assert await other.readmodel.changes.wait(org.id, bumped, timeout=10) == again

"""``questline backup`` / ``questline restore``: a round trip of the SQLite database,
taken while the service keeps serving, and a restore that will not overwrite by accident."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from questline.app import create_app
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role
from tests.factories import World
from tests.support.harness import AppHarness
from tests.support.live import questline_command

pytestmark = pytest.mark.anyio


def cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"QUESTLINE_DATA_DIR": str(data_dir), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [*questline_command(), *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[FastAPI, World, Path]]:
    """An application on its own SQLite database (the file the commands work on)."""
    data_dir = tmp_path / "data"
    settings = Settings(data_dir=data_dir, rate_limit_enabled=False, _env_file=None)  # type: ignore[call-arg]
    await asyncio.to_thread(upgrade, settings)
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://q.test") as client:
            state = AppHarness(app)
            yield app, World(client=client, tokens=state.tokens, db=state.db), data_dir
    finally:
        await app.state.questline.db.dispose()


async def test_backup_while_serving_then_restore_brings_the_data_back(
    served: tuple[FastAPI, World, Path], tmp_path: Path
) -> None:
    app, world, data_dir = served
    org = world.org()
    await org.create_team("Before")
    backup = tmp_path / "backups" / "questline.sqlite"

    # A read transaction of the serving app stays open while the backup runs.
    async with app.state.questline.db.engine.begin() as busy:
        await busy.exec_driver_sql("SELECT count(*) FROM teams")
        done = await asyncio.to_thread(cli, data_dir, "backup", str(backup))
    assert done.returncode == 0, done.stderr
    assert "backed up to" in done.stdout
    with sqlite3.connect(backup) as copy:
        assert copy.execute("SELECT name FROM teams").fetchall() == [("Before",)]

    await org.create_team("After")
    refused = await asyncio.to_thread(cli, data_dir, "restore", str(backup))
    assert refused.returncode == 1
    assert "--force" in refused.stderr
    assert sorted(t["Name"] for t in await org.teams()) == ["After", "Before"]

    restored = await asyncio.to_thread(cli, data_dir, "restore", str(backup), "--force")
    assert restored.returncode == 0, restored.stderr
    # The serving application sees the restored content (one step, never half of it).
    assert [t["Name"] for t in await org.teams()] == ["Before"]
    token = world.tokens.mint(role=Role.ADMIN, org_id=org.id, subject="t")
    created = await world.client.post(
        "/team", json={"name": "After restore"}, headers={"Authorization": f"Bearer {token}"}
    )
    assert created.status_code == 201, created.text


async def test_restore_into_an_empty_data_directory_needs_no_force(
    served: tuple[FastAPI, World, Path], tmp_path: Path
) -> None:
    _, world, data_dir = served
    org = world.org()
    await org.create_team("Kept")
    backup = tmp_path / "b.sqlite"
    assert (await asyncio.to_thread(cli, data_dir, "backup", str(backup))).returncode == 0

    elsewhere = tmp_path / "new-host"
    restored = await asyncio.to_thread(cli, elsewhere, "restore", str(backup))
    assert restored.returncode == 0, restored.stderr
    settings = Settings(data_dir=elsewhere, rate_limit_enabled=False, _env_file=None)  # type: ignore[call-arg]
    other = create_app(settings)
    try:
        transport = httpx.ASGITransport(app=other)
        async with httpx.AsyncClient(transport=transport, base_url="http://q.test") as client:
            # Tokens are signed with the new host's own secret (not part of the database).
            token = AppHarness(other).tokens.mint(role=Role.MEMBER, org_id=org.id, subject="t")
            response = await client.get("/team", headers={"Authorization": f"Bearer {token}"})
    finally:
        await other.state.questline.db.dispose()
    assert [t["Name"] for t in response.json()] == ["Kept"]


async def test_backup_refuses_to_overwrite_and_restore_refuses_other_files(
    served: tuple[FastAPI, World, Path], tmp_path: Path
) -> None:
    _, world, data_dir = served
    org = world.org()
    await org.create_team("Untouched")
    target = tmp_path / "exists.sqlite"
    target.write_bytes(b"precious")
    refused = await asyncio.to_thread(cli, data_dir, "backup", str(target))
    assert refused.returncode == 1
    assert "exists" in refused.stderr
    assert target.read_bytes() == b"precious"

    not_a_database = await asyncio.to_thread(cli, data_dir, "restore", str(target), "--force")
    assert not_a_database.returncode == 1
    assert "not a Questline SQLite database" in not_a_database.stderr
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE t (x)")
    foreign = await asyncio.to_thread(cli, data_dir, "restore", str(other), "--force")
    assert foreign.returncode == 1
    assert "not a Questline" in foreign.stderr
    assert [t["Name"] for t in await org.teams()] == ["Untouched"]


def test_postgresql_is_pointed_at_pg_dump(tmp_path: Path) -> None:
    env_url = "postgresql+asyncpg://nobody@127.0.0.1:9/none"
    done = subprocess.run(
        [*questline_command(), "backup", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        env={"QUESTLINE_DATABASE_URL": env_url, "QUESTLINE_DATA_DIR": str(tmp_path)},
        timeout=120,
    )
    assert done.returncode == 1
    assert "pg_dump" in done.stderr
    assert not (tmp_path / "x").exists()

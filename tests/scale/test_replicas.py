"""Reads from a streaming replica behind pgbouncer, in-process (two apps = two processes).

The replica's replay is paused (``pg_wal_replay_pause()``) to make it lag on purpose:
then a write is certainly not on the replica yet, and each rule can be seen at work.

* The writer's own next read sees its write: in the process that wrote (per
  organization), and in another process when the request carries the write's
  ``Questline-Read-After`` header or cookie.
* A reader without it may read the replica's older state, but only while the replica is
  within the lag bound; past it, reads go to the primary.
* pgbouncer in transaction mode: many concurrent requests share a few server
  connections with the pooler setting; without it asyncpg's statement cache breaks.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from questline.config import Settings
from questline.storage.db import postgres_engine
from questline.storage.replicas import VERSION_SQL, ReplicaBehind
from questline.web.readafter import COOKIE, HEADER
from tests.factories import bearer
from tests.scale.conftest import Apps, needs_postgres, reads_on
from tests.support.topology import DATABASE, Cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow, needs_postgres]


@asynccontextmanager
async def replay_paused(cluster: Cluster) -> AsyncIterator[None]:
    assert cluster.standby is not None
    connection = await asyncpg.connect(
        host="127.0.0.1", port=cluster.standby.port, user="questline", database=DATABASE
    )
    try:
        await connection.execute("SELECT pg_wal_replay_pause()")
        yield
    finally:
        await connection.execute("SELECT pg_wal_replay_resume()")
        await connection.close()


async def team_names(client: httpx.AsyncClient, headers: dict[str, str]) -> list[str]:
    response = await client.get("/team", headers=headers)
    assert response.status_code == 200, response.text
    return [t["Name"] for t in response.json()]


async def test_the_writer_reads_its_write_in_any_process_others_within_the_bound(
    cluster: Cluster, apps: Apps
) -> None:
    writer, other = apps(), apps(database_replica_max_lag_seconds=120)
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))
    member = bearer(cluster.member_token(org))
    first = await writer.client.post("/team", json={"name": "Before"}, headers=admin)
    assert first.status_code == 201, first.text
    await writer.wait_replica_usable()
    await other.wait_replica_usable()
    # Until the replica has the first write, the other process reads it on the primary.
    deadline = time.monotonic() + 30
    while await team_names(other.client, member) != ["Before"]:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)

    async with replay_paused(cluster):
        created = await writer.client.post("/team", json={"name": "Fresh"}, headers=admin)
        assert created.status_code == 201, created.text
        position = created.headers[HEADER]
        assert created.cookies[COOKIE].strip('"') == position  # quoted: it has a slash

        # The same process: the organization's last write is not on the replica.
        on_primary = reads_on("primary")
        assert await team_names(writer.client, member) == ["Before", "Fresh"]
        assert reads_on("primary") == on_primary + 1

        # Another process: the header or the cookie carries the position.
        with_header = {**member, HEADER: position}
        assert await team_names(other.client, with_header) == ["Before", "Fresh"]
        other.client.cookies.set(COOKIE, position)
        assert await team_names(other.client, member) == ["Before", "Fresh"]
        other.client.cookies.clear()
        garbled = {**member, HEADER: "not-a-position"}
        assert await team_names(other.client, garbled) == ["Before", "Fresh"]

        # Without it: the replica's older state is allowed, within the bound. (Once the
        # read model has the write's version from its notification, the entry is built
        # on the primary instead: never from a replica behind that version.)
        assert await team_names(other.client, member) in (["Before"], ["Before", "Fresh"])

    # Replay resumes: everyone sees the write.
    deadline = time.monotonic() + 30
    while await team_names(other.client, member) != ["Before", "Fresh"]:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_a_replica_past_the_lag_bound_serves_no_reads(cluster: Cluster, apps: Apps) -> None:
    writer, other = apps(), apps(database_replica_max_lag_seconds=1)
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))
    member = bearer(cluster.member_token(org))
    await other.wait_replica_usable()
    async with replay_paused(cluster):
        created = await writer.client.post("/team", json={"name": "Late"}, headers=admin)
        assert created.status_code == 201, created.text
        # The paused replica falls behind by more than a second: the primary answers.
        replica = other.router.replicas[0]
        deadline = time.monotonic() + 30
        while replica.usable(time.monotonic(), 1):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        on_primary = reads_on("primary")
        assert await team_names(other.client, member) == ["Late"]
        assert reads_on("primary") == on_primary + 1


async def test_many_concurrent_requests_share_few_pgbouncer_server_connections(
    cluster: Cluster, apps: Apps
) -> None:
    """pgbouncer gives this cluster 4 server connections; the app keeps up to 20."""
    process = apps(database_replica_urls=[])
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))

    async def create(index: int) -> httpx.Response:
        return await process.client.post("/team", json={"name": f"T{index:02}"}, headers=admin)

    async def read(_: int) -> httpx.Response:
        return await process.client.get("/leaderboard", headers=admin)

    responses = await asyncio.gather(*(create(i) for i in range(30)), *(read(i) for i in range(30)))
    assert [r.status_code for r in responses] == [201] * 30 + [200] * 30
    names = await team_names(process.client, admin)
    assert names == [f"T{i:02}" for i in range(30)]


async def test_bulk_copies_behind_pgbouncer_are_all_or_nothing(
    cluster: Cluster, apps: Apps
) -> None:
    """POST /team/bulk writes with COPY (and members with one unnest INSERT): through
    pgbouncer's transaction pooling, concurrent bulks on 4 server connections all
    commit, and one whose name is taken changes nothing."""
    process = apps(database_replica_urls=[])
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))
    csv = {**admin, "Content-Type": "text/csv"}

    def body(batch: int) -> bytes:
        rows = [f"B{batch} T{i},p{batch}-{i}@example.org,P," for i in range(50)]
        return "\r\n".join(["team,email,givenName,tags", *rows, ""]).encode()

    responses = await asyncio.gather(
        *(process.client.post("/team/bulk", content=body(b), headers=csv) for b in range(8))
    )
    assert [r.status_code for r in responses] == [201] * 8, [r.text[:200] for r in responses]
    assert len(await team_names(process.client, admin)) == 400
    clash = [{"name": "Fresh"}, {"name": "B3 T7"}]
    refused = await process.client.post("/team/bulk", json=clash, headers=admin)
    assert refused.status_code == 409, refused.text
    assert "Fresh" not in await team_names(process.client, admin)


async def test_without_the_pooler_setting_asyncpg_statements_break_behind_pgbouncer(
    cluster: Cluster,
) -> None:
    """The control: pgbouncer resets server connections after each transaction, so a
    statement asyncpg prepared and cached in one transaction is gone in the next."""
    settings: Settings = cluster.settings(database_transaction_pooler=False)
    engine = postgres_engine(cluster.pooled_url, settings)

    async def three_transactions() -> None:
        async with engine.connect() as connection:
            for _ in range(3):
                await connection.execute(text("SELECT count(*) FROM teams"))
                await connection.commit()

    try:
        with pytest.raises(DBAPIError, match="prepared statement"):
            await three_transactions()
    finally:
        await engine.dispose()


async def test_a_read_model_entry_is_never_built_from_a_replica_behind_its_version(
    cluster: Cluster, apps: Apps
) -> None:
    """Another process learns a new version from a notification, with no WAL position:
    the replica must hold that version, else the entry is built on the primary."""
    writer, other = apps(), apps(database_replica_max_lag_seconds=120)
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))
    first = await writer.client.post("/team", json={"name": "One"}, headers=admin)
    assert first.status_code == 201, first.text
    await other.wait_replica_usable()
    db = other.app.state.questline.db

    async def replica_version() -> int:
        session = db.new_session(write=False)
        async with session:
            other.router.route_reads(session, lambda: org)
            assert other.router.replica_of(session) is not None
            return int(await session.scalar(text(VERSION_SQL), {"organization_id": org}) or 0)

    deadline = time.monotonic() + 30
    while (before := await replica_version()) < 1:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)

    async with replay_paused(cluster):
        second = await writer.client.post("/team", json={"name": "Two"}, headers=admin)
        assert second.status_code == 201, second.text
        async with db.session(write=False) as primary:
            newest = int(await primary.scalar(text(VERSION_SQL), {"organization_id": org}))
        assert newest > before
        assert await replica_version() == before
        session = db.new_session(write=False)
        async with session:
            other.router.route_reads(session, lambda: org)
            await other.router.require_version(session, org, before)  # the replica has it
        session = db.new_session(write=False)
        async with session:
            other.router.route_reads(session, lambda: org)
            with pytest.raises(ReplicaBehind):
                await other.router.require_version(session, org, newest)

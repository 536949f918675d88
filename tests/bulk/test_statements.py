"""POST /team/bulk is a fixed number of statements (COPY on PostgreSQL, executemany on
SQLite), answers with exactly the ``Team`` schema, and a conflict found only at write
time still leaves nothing behind."""

from __future__ import annotations

import gc
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import aiosqlite
import asyncpg
import pytest
from sqlalchemy import event, select

from questline.bulk import service as bulk_service
from questline.storage import many_rows, tenancy
from questline.teams.schemas import Team
from questline.web import bodies
from questline.web.idempotency import IdempotencyRecord
from tests.bulk.factories import csv_text, post_csv, post_json, team_items, team_names
from tests.factories import Org, World
from tests.support.harness import AppHarness


@contextmanager
def counted(app_state: AppHarness, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The first keyword of every statement the engine runs, plus the driver's own
    bulk calls that the engine does not see: ``COPY <table>`` on PostgreSQL (asyncpg),
    ``EXECUTEMANY <table>`` on SQLite (aiosqlite)."""
    seen: list[str] = []
    original = asyncpg.Connection.copy_records_to_table
    original_many = aiosqlite.Connection.executemany

    async def copy(self: asyncpg.Connection, table_name: str, **kwargs: Any) -> str:
        seen.append(f"COPY {table_name}")
        result: str = await original(self, table_name, **kwargs)
        return result

    async def many(self: aiosqlite.Connection, sql: str, parameters: Any) -> Any:
        seen.append(f"EXECUTEMANY {sql.split()[2]}")
        return await original_many(self, sql, parameters)

    def before(*args: Any) -> None:
        seen.append(str(args[2]).lstrip().split(None, 1)[0].upper())

    monkeypatch.setattr(asyncpg.Connection, "copy_records_to_table", copy)
    monkeypatch.setattr(aiosqlite.Connection, "executemany", many)
    engine = app_state.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", before)
        monkeypatch.setattr(asyncpg.Connection, "copy_records_to_table", original)
        monkeypatch.setattr(aiosqlite.Connection, "executemany", original_many)


async def statements_of(
    app_state: AppHarness, monkeypatch: pytest.MonkeyPatch, send: Callable[[], Awaitable[Any]]
) -> list[str]:
    with counted(app_state, monkeypatch) as seen:
        response = await send()
    assert response.status_code == 201, response.text[:500]
    return seen


@pytest.mark.anyio
async def test_json_statements_are_as_many_for_10_teams_as_for_3000(
    world: World, app_state: AppHarness, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = world.org()
    people = [(await org.create_member())["Id"] for _ in range(3)]
    before = len(await org.teams())
    small = await statements_of(
        app_state,
        monkeypatch,
        lambda: post_json(org, team_items(10, "Small", members=people, tags=["a"])),
    )
    large = await statements_of(
        app_state,
        monkeypatch,
        lambda: post_json(org, team_items(3000, "Large", members=people, tags=["a"])),
    )
    assert small == large, (small, large)
    if app_state.settings.row_security:
        # COPY into the staging table, then INSERT … SELECT into teams, team_members and
        # the audit log (each between its CREATE and DROP); the organization's
        # set_config first.
        assert small.count(f"COPY {many_rows.STAGING_TABLE}") == 3, small
        assert small.count("CREATE") == small.count("DROP") == 3, small
        assert small.count("INSERT") <= 2 + 3, small
        assert len(small) <= 12 + 1 + 3 * 3, small
    else:
        bulk = "COPY" if backend == "postgresql" else "EXECUTEMANY"
        assert small.count(f"{bulk} teams") == 1, small
        assert small.count(f"{bulk} team_members") == 1, small
        assert small.count("INSERT") <= 2, small  # the outbox row, the version bump
        assert len(small) <= 12, small
    teams = await org.teams()
    assert len(teams) == before + 3010
    assert {t["MemberCount"] for t in teams if t["Name"].startswith(("Small", "Large"))} == {3}


@pytest.mark.anyio
async def test_csv_statements_are_as_many_for_10_teams_as_for_2000(
    world: World, app_state: AppHarness, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Members created by e-mail: one insert of them all, one SELECT of their ids."""
    org = world.org()
    existing = await org.create_member("known@example.org")
    before = len(await org.teams())

    def body(prefix: str, teams: int) -> str:
        rows = [
            row
            for i in range(teams)
            for row in (
                [f"{prefix} {i}", f"{prefix}-{i}@example.org", "New", "t"],
                [f"{prefix} {i}", "KNOWN@example.org", "Known", ""],
            )
        ]
        return csv_text(rows)

    small = await statements_of(app_state, monkeypatch, lambda: post_csv(org, body("s", 10)))
    large = await statements_of(app_state, monkeypatch, lambda: post_csv(org, body("l", 2000)))
    assert small == large, (small, large)
    teams = [t for t in await org.teams() if t["Name"].startswith(("s ", "l "))]
    assert len(teams) == 2010
    assert len(await org.teams()) == before + 2010
    assert {t["MemberCount"] for t in teams} == {2}
    listed = await org.client.get(f"/team/{teams[-1]['Id']}/members", headers=org.admin)
    assert existing["Id"] in {m["Id"] for m in listed.json()}


@pytest.mark.anyio
async def test_the_answer_is_exactly_the_team_schema_and_what_reads_return(world: World) -> None:
    org = world.org()
    ada = await org.create_member("ada@example.org")
    response = await post_json(
        org,
        [{"name": "Ärger", "members": [ada["Id"]], "tags": ["x", "y"]}, {"name": "Plain"}],
    )
    assert response.status_code == 201, response.text
    for item in response.json():
        model = Team.model_validate(item)
        assert model.model_dump(mode="json", by_alias=True) == item
        read = await org.client.get(f"/team/{item['Id']}", headers=org.admin)
        assert read.status_code == 200
        assert {key: read.json()[key] for key in item} == item


@pytest.mark.anyio
async def test_a_name_taken_between_check_and_write_is_409_and_keeps_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent request takes a name after this one's check: the write itself (COPY
    on PostgreSQL) fails on the unique index; the answer is 409 and none of the
    request's teams or members exist."""
    org = world.org()
    await org.create_team("Taken")

    async def nothing_taken(*args: Any, **kwargs: Any) -> list[Any]:
        return []  # the check ran before the other request committed

    monkeypatch.setattr(bulk_service, "_taken_names", nothing_taken)
    body = csv_text(
        [["Fresh", "fresh@example.org", "F", ""], ["Taken", "other@example.org", "O", ""]]
    )
    response = await post_csv(org, body)
    assert response.status_code == 409, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert await team_names(org) == ["Taken"]
    assert not {"fresh@example.org", "other@example.org"} & await _org_member_emails(org)


@pytest.mark.anyio
async def test_an_idempotency_record_is_the_request_hash_and_the_response(
    world: World, app_state: AppHarness
) -> None:
    """Not the request: a 3 MB upload is kept as 64 hex digits; a retry with the same
    body replays the stored bytes, with another body under the same key it is 422."""
    org = world.org()
    key = f"upload-{uuid.uuid4()}"
    headers = {**org.admin, "Idempotency-Key": key}
    items = team_items(400, "Kept", tags=["cohort"])
    first = await post_json(org, items, headers=headers)
    assert first.status_code == 201
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with app_state.db.session() as session:
            record = await session.scalar(
                select(IdempotencyRecord).where(IdempotencyRecord.key == key)
            )
    assert record is not None
    assert len(record.request_hash) == 64
    int(record.request_hash, 16)  # hexadecimal
    assert bytes(record.body) == first.content
    assert record.status_code == 201
    again = await post_json(org, items, headers=headers)
    assert (again.status_code, again.content) == (201, first.content)
    assert again.headers["Idempotent-Replayed"] == "true"
    changed = await post_json(org, [*items[:-1], {"name": "Changed"}], headers=headers)
    assert changed.status_code == 422
    assert "different request" in changed.json()["detail"]
    assert len(await org.teams()) == 400


async def _org_member_emails(org: Org) -> set[str]:
    response = await org.client.get("/member", headers=org.admin)
    assert response.status_code == 200, response.text
    return {m["Email"] for m in response.json()}


def test_the_collector_pause_ends_with_the_last_bulk_and_never_lasts_forever(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Overlapping bulk requests share one pause of the cyclic GC; the last one to end
    turns it back on, and while others still run, one past the maximum pause collects."""
    assert gc.isenabled()
    full_collections: list[int] = []

    def watch(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2:
            full_collections.append(1)

    gc.callbacks.append(watch)
    try:
        with bodies.gc_paused():
            with bodies.gc_paused():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the first request still runs
            assert full_collections == []  # not yet overdue
            monkeypatch.setattr(bodies, "GC_PAUSE_MAX_SECONDS", 0.0)
            with bodies.gc_paused():
                pass
            assert full_collections == [1]  # overdue: collected while still paused
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(watch)
        gc.enable()

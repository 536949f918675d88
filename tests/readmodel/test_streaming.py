"""Whole lists (``GET /team``, ``GET /discipline`` without ``limit``): cached bytes
while short, streamed in chunks from a server-side cursor when long, never built whole.

The ASGI messages are read directly (no HTTP client in between), so the tests see each
chunk the application sends: a streamed list is many ``http.response.body`` messages
with ``more_body``, no ``content-length``, and no cache entry."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import anyio
import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import insert

from questline.organizations.service import ensure_organization
from questline.readmodel import http as readmodel_http
from questline.readmodel.versions import bump
from questline.storage import tenancy
from questline.teams import queries as teams_queries
from questline.teams.models import Team
from questline.web.pagination import PageRequest
from tests.factories import Org, World
from tests.progress.factories import make_discipline
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def asgi_get(
    app: FastAPI, path: str, headers: dict[str, str], *, leave_early: bool = False
) -> dict[str, Any]:
    """The response's status, headers and every body message, as the app sent them
    (``leave_early``: the client disconnects as soon as the request is sent)."""
    messages: list[dict[str, Any]] = []
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"questline.test")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("questline.test", 80),
    }
    sent = False
    finished = anyio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        if not leave_early:
            await finished.wait()  # the client stays until the whole answer came
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            finished.set()

    await app(scope, receive, send)
    start = next(m for m in messages if m["type"] == "http.response.start")
    bodies = [m for m in messages if m["type"] == "http.response.body"]
    return {
        "status": start["status"],
        "headers": {k.decode(): v.decode() for k, v in start["headers"]},
        "chunks": [m["body"] for m in bodies if m["body"]],
        "more": [m.get("more_body", False) for m in bodies],
        "body": b"".join(m["body"] for m in bodies),
    }


async def seed_teams(world: World, org: Org, count: int) -> None:
    """``count`` teams written set-based (one multi-row insert), as bench/dataset/seed.py
    does, then the organization's version bumped as a write would."""
    now = dt.datetime.now(dt.UTC)
    rows = [
        {
            "organization_id": org.id,
            "id": uuid.uuid4(),
            "name": f"Bulk {n:06d}",
            "name_key": f"bulk {n:06d}",
            "status": "Active",
            "tags": ["a"] if n % 2 else [],
            "score": n % 97,
            "tasks_completed": 0,
            "score_reached_at": now,
            "is_survey_completed": False,
            "is_admin_team": False,
            "is_ranked": True,
            "created_at": now,
            "updated_at": now,
            "version": 1,
        }
        for n in range(count)
    ]
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with world.db.session() as session:
            await ensure_organization(session, org.id)
        async with world.db.session() as session:
            await session.execute(insert(Team), rows)
            await bump(session, org.id)


def stream_past(monkeypatch: pytest.MonkeyPatch, state: AppHarness, rows: int) -> None:
    settings = state.settings.model_copy(update={"read_model_stream_rows": rows})
    monkeypatch.setattr(state.state, "settings", settings)


async def fresh_list(world: World, org: Org) -> list[Any]:
    """The list as the paged code path builds it (the reference)."""
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with world.db.session(write=False) as session:
            rows = await teams_queries.list_team_rows(
                session, org_id=org.id, page=PageRequest(limit=None, after=None)
            )
    return list(orjson.loads(teams_queries.encode_team_rows(rows)))


async def test_a_short_list_is_cached_bytes_and_a_long_one_is_streamed(
    world: World, app: FastAPI, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = world.org()
    for n in range(8):
        await org.create_team(f"Team {n}")
    expected = await fresh_list(world, org)
    short = await asgi_get(app, "/team", org.member)
    assert short["status"] == 200
    assert "content-length" in short["headers"]
    assert orjson.loads(short["body"]) == expected
    cached = len(app_state.readmodel.cache)
    assert cached == 1

    stream_past(monkeypatch, app_state, 3)
    monkeypatch.setattr(readmodel_http, "STREAM_CHUNK_ROWS", 2)
    app_state.readmodel.cache.drop_bodies()
    streamed = await asgi_get(app, "/team", org.member)
    assert streamed["status"] == 200
    assert "content-length" not in streamed["headers"]
    assert streamed["headers"]["content-type"] == "application/json"
    # [t0,t1 | t2,t3 (the 4 read to learn it is long) | t4,t5 | t6,t7 | ]
    assert len(streamed["chunks"]) == 5, streamed["chunks"]
    assert streamed["more"][:4] == [True] * 4
    assert streamed["body"] == short["body"]  # the same JSON, byte for byte
    assert len(app_state.readmodel.cache) == 0  # a streamed list is not kept
    # Still a validator: 304 while nothing changed, without reading the list.
    etag = streamed["headers"]["etag"]
    again = await asgi_get(app, "/team", {**org.member, "If-None-Match": etag})
    assert again["status"] == 304


async def test_the_discipline_list_streams_the_same_json(
    world: World, app: FastAPI, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = world.org()
    for _ in range(5):
        await make_discipline(world.db, org_id=org.id, shape=[[[1, 2]], [[3]]])
    await make_discipline(world.db, org_id=None, shape=[[[5]]])
    await org.create_team()  # the organization's version moves past the inserts
    paged = await world.client.get("/discipline?limit=100", headers=org.member)
    whole = await asgi_get(app, "/discipline", org.member)
    assert whole["status"] == 200
    assert whole["body"] == paged.content
    stream_past(monkeypatch, app_state, 2)
    monkeypatch.setattr(readmodel_http, "STREAM_CHUNK_ROWS", 2)
    app_state.readmodel.cache.drop_bodies()
    streamed = await asgi_get(app, "/discipline", org.member)
    assert len(streamed["chunks"]) > 2
    assert "content-length" not in streamed["headers"]
    assert streamed["body"] == paged.content


async def test_a_large_organization_streams_in_bounded_chunks(
    world: World, app: FastAPI, app_state: AppHarness
) -> None:
    org = world.org()
    await seed_teams(world, org, 20_000)
    threshold = app_state.settings.read_model_stream_rows
    assert threshold < 20_000
    streamed = await asgi_get(app, "/team", org.member)
    assert streamed["status"] == 200
    assert "content-length" not in streamed["headers"]
    items = orjson.loads(streamed["body"])
    assert items == await fresh_list(world, org)
    assert len(items) == 20_000
    # Never built whole: each chunk holds at most one fetch of rows.
    assert len(streamed["chunks"]) >= 20_000 // readmodel_http.STREAM_CHUNK_ROWS
    per_chunk = [chunk.count(b'"Id":') for chunk in streamed["chunks"]]
    assert max(per_chunk) <= readmodel_http.STREAM_CHUNK_ROWS
    assert sum(per_chunk) == 20_000
    assert len(app_state.readmodel.cache) == 0
    # Another organization's list is its own (and short: cached).
    other = world.org()
    await other.create_team("Elsewhere")
    theirs = await asgi_get(app, "/team", other.member)
    assert [t["Name"] for t in orjson.loads(theirs["body"])] == ["Elsewhere"]


async def test_a_client_leaving_mid_stream_gives_the_connection_back(
    world: World, app: FastAPI, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = world.org()
    for n in range(8):
        await org.create_team(f"Team {n}")
    stream_past(monkeypatch, app_state, 3)
    monkeypatch.setattr(readmodel_http, "STREAM_CHUNK_ROWS", 2)
    left = await asgi_get(app, "/team", org.member, leave_early=True)
    assert left["status"] == 200
    pool = app_state.db.engine.pool
    for _ in range(1000):  # the close is shielded from the cancellation: it ends
        if not pool.checkedout():  # type: ignore[attr-defined]
            break
        await anyio.sleep(0.01)
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    # And the service goes on: the next request streams the whole list.
    whole = await asgi_get(app, "/team", org.member)
    assert len(orjson.loads(whole["body"])) == 8

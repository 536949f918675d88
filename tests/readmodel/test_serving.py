"""Reads served from the read model: hits without statements, 304s, read-your-writes,
bodies that match the response models, and cached bytes equal to a fresh build."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from questline.disciplines import schemas as discipline_schemas
from questline.leaderboard import schemas as leaderboard_schemas
from questline.progress import schemas as progress_schemas
from questline.teams import schemas as team_schemas
from tests.disciplines.sql import count_statements
from tests.factories import Org, World
from tests.progress.factories import completed, make_discipline
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def _seeded(world: World) -> tuple[Org, list[dict[str, Any]], Any]:
    org = world.org()
    teams = [await org.create_team(f"Team {n}") for n in range(4)]
    await org.add_member(teams[0]["Id"])
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 20], [5]], [[1]]])
    await completed(org, teams[0]["Id"], tree.task(0, 0, 0))
    await completed(org, teams[1]["Id"], tree.task(0, 0, 1))
    return org, teams, tree


def _urls(teams: list[dict[str, Any]], tree: Any) -> dict[str, TypeAdapter[Any]]:
    """Every cached read, with the model its body must validate against."""
    team = teams[0]["Id"]
    return {
        "/leaderboard": TypeAdapter(list[leaderboard_schemas.LeaderboardEntry]),
        "/leaderboard?limit=2&offset=1": TypeAdapter(list[leaderboard_schemas.LeaderboardEntry]),
        f"/leaderboard?discipline={tree.id}": TypeAdapter(
            list[leaderboard_schemas.LeaderboardEntry]
        ),
        "/leaderboard/graph?top=3": TypeAdapter(list[leaderboard_schemas.Series]),
        "/team": TypeAdapter(list[team_schemas.Team]),
        "/team?limit=2": TypeAdapter(list[team_schemas.Team]),
        f"/team/{team}": TypeAdapter(team_schemas.TeamDetail),
        f"/team/{team}/overview": TypeAdapter(progress_schemas.Overview),
        f"/discipline/{tree.id}": TypeAdapter(discipline_schemas.Discipline),
    }


async def test_bodies_match_the_response_models(world: World) -> None:
    org, teams, tree = await _seeded(world)
    for url, adapter in _urls(teams, tree).items():
        response = await world.client.get(url, headers=org.member)
        assert response.status_code == 200, (url, response.text)
        assert response.headers["content-type"] == "application/json"
        model = adapter.validate_json(response.content)
        # What the response model would write is exactly what was sent.
        assert adapter.dump_json(model, by_alias=True) == response.content, url


async def test_a_hit_sends_no_statement_and_a_304_builds_nothing(
    world: World, app_state: AppHarness
) -> None:
    org, teams, tree = await _seeded(world)
    for url in _urls(teams, tree):
        first = await world.client.get(url, headers=org.member)
        assert first.status_code == 200
        etag = first.headers["etag"]
        with count_statements(app_state.db) as log:
            again = await world.client.get(url, headers=org.member)
            unchanged = await world.client.get(url, headers={**org.member, "If-None-Match": etag})
        assert again.content == first.content
        assert again.headers["etag"] == etag
        assert unchanged.status_code == 304, url
        assert unchanged.content == b""
        assert unchanged.headers["etag"] == etag
        assert log.statements == 0, (url, log.texts)


async def test_304_without_any_cached_entry_for_version_etags(
    world: World, app_state: AppHarness
) -> None:
    org, _teams, _tree = await _seeded(world)
    first = await world.client.get("/leaderboard", headers=org.member)
    app_state.readmodel.cache.drop_bodies()
    with count_statements(app_state.db) as log:
        unchanged = await world.client.get(
            "/leaderboard", headers={**org.member, "If-None-Match": first.headers["etag"]}
        )
    assert unchanged.status_code == 304
    assert log.statements == 0


async def test_the_writer_reads_its_write(world: World) -> None:
    org, teams, tree = await _seeded(world)
    before = await world.client.get("/leaderboard", headers=org.member)
    overview = await world.client.get(f"/team/{teams[2]['Id']}/overview", headers=org.member)
    assert overview.json()["Score"] == 0
    await completed(org, teams[2]["Id"], tree.task(0, 1, 0))
    after = await world.client.get(
        "/leaderboard", headers={**org.member, "If-None-Match": before.headers["etag"]}
    )
    assert after.status_code == 200
    assert after.headers["etag"] != before.headers["etag"]
    scores = {e["TeamId"]: e["Score"] for e in after.json()}
    assert scores[teams[2]["Id"]] == 5
    overview = await world.client.get(f"/team/{teams[2]['Id']}/overview", headers=org.member)
    assert overview.json()["Score"] == 5


async def test_organizations_and_roles_never_share_an_entry(world: World) -> None:
    org, teams, _tree = await _seeded(world)
    other = world.org()
    await other.create_team("Elsewhere")
    mine = await world.client.get("/team", headers=org.member)
    theirs = await world.client.get("/team", headers=other.member)
    assert {t["Name"] for t in theirs.json()} == {"Elsewhere"}
    assert len(mine.json()) == 4
    assert mine.headers["etag"] != theirs.headers["etag"]
    # Another organization's team is 404 even when that URL's body is cached for its own.
    url = f"/team/{teams[0]['Id']}"
    assert (await world.client.get(url, headers=org.member)).status_code == 200
    assert (await world.client.get(url, headers=other.member)).status_code == 404
    # A member's ETag is not an admin's: bodies may differ by role.
    admin = await world.client.get(url, headers=org.admin)
    member = await world.client.get(url, headers=org.member)
    assert admin.headers["etag"] != member.headers["etag"]


async def test_a_team_etag_from_get_is_accepted_by_if_match(world: World) -> None:
    org, teams, _tree = await _seeded(world)
    url = f"/team/{teams[3]['Id']}"
    etag = (await world.client.get(url, headers=org.admin)).headers["etag"]
    changed = await world.client.patch(
        url, json={"Name": "Renamed"}, headers={**org.admin, "If-Match": etag}
    )
    assert changed.status_code == 200, changed.text
    stale = await world.client.patch(
        url, json={"Name": "Again"}, headers={**org.admin, "If-Match": etag}
    )
    assert stale.status_code == 412


# -- property: after random writes, what is cached equals a fresh build ------------------

WRITES = st.lists(
    st.tuples(
        st.sampled_from(
            ["complete", "withdraw", "admin", "rename", "archive", "member", "unmember", "team"]
        ),
        st.integers(min_value=0, max_value=3),
        st.integers(min_value=0, max_value=3),
    ),
    min_size=1,
    max_size=6,
)


async def _write(
    client: httpx.AsyncClient, org: Org, teams: list[dict[str, Any]], tree: Any, op: Any
) -> None:
    kind, t, k = op
    team = teams[t]["Id"]
    task = tree.tasks[k]
    headers = org.admin
    if kind == "complete":
        await client.post(f"/team/{team}/progress", json={"TaskId": task}, headers=headers)
    elif kind == "withdraw":
        await client.delete(f"/team/{team}/progress/{task}", headers=headers)
    elif kind == "admin":
        await client.post(f"/team/{team}/isadminteam", headers=headers)
    elif kind == "rename":
        await client.patch(
            f"/team/{team}", json={"Name": f"T{uuid.uuid4().hex[:6]}"}, headers=headers
        )
    elif kind == "archive":
        current = (await client.get(f"/team/{team}", headers=headers)).json()["Status"]
        status = "Active" if current == "Archived" else "Archived"
        await client.patch(f"/team/{team}", json={"Status": status}, headers=headers)
    elif kind == "member":
        await org.add_member(team, email=f"m{k}@example.org")
    elif kind == "unmember":
        members = (await client.get(f"/team/{team}/members", headers=headers)).json()
        if members:
            await client.delete(f"/team/{team}/members/{members[0]['Id']}", headers=headers)
    else:
        await org.create_team()


@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(writes=WRITES)
async def test_cached_bytes_equal_a_fresh_build_after_random_writes(
    world: World, app_state: AppHarness, writes: list[Any]
) -> None:
    if not hasattr(world, "_seed"):
        world._seed = await _seeded(world)  # type: ignore[attr-defined]
    org, teams, tree = world._seed  # type: ignore[attr-defined]
    urls = list(_urls(teams, tree))
    for url in urls:  # cache every read at the current version
        await world.client.get(url, headers=org.member)
    for op in writes:
        await _write(world.client, org, teams, tree, op)
        cached = [await world.client.get(url, headers=org.member) for url in urls]
        app_state.readmodel.cache.drop_bodies()
        fresh = [await world.client.get(url, headers=org.member) for url in urls]
        for url, a, b in zip(urls, cached, fresh, strict=True):
            assert a.status_code == b.status_code, url
            assert a.content == b.content, url
            # (The ETags may differ: a body carried across a write that did not touch
            # it keeps the ETag it was sent with, tests/readmodel/test_moved.py.)

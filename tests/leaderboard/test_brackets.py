"""Brackets: ``?tag=`` ranks only the teams carrying the tag, 1, 2, 3 … among themselves,
on the leaderboard, ``around``, CSV, the graph and the stream's first event."""

from __future__ import annotations

import pytest

from tests.factories import World
from tests.seasons.support import complete, create_task

pytestmark = pytest.mark.anyio


async def test_a_bracket_ranks_its_teams_among_themselves(world: World) -> None:
    org, other = world.org(), world.org()
    _, tasks = await create_task(org, [10, 20, 30])
    a = await org.create_team("A", tags=["Juniors"])
    b = await org.create_team("B", tags=["seniors"])
    c = await org.create_team("C", tags=["juniors", "x"])
    await complete(org, b["Id"], tasks[2])
    await complete(org, c["Id"], tasks[1])
    await complete(org, a["Id"], tasks[0])
    await other.create_team("Z", tags=["juniors"])
    response = await world.client.get("/leaderboard", params={"tag": "JUNIORS"}, headers=org.member)
    assert response.status_code == 200, response.text
    assert [(e["Rank"], e["Name"], e["Score"]) for e in response.json()] == [
        (1, "C", 20),
        (2, "A", 10),
    ]
    page = await world.client.get(
        "/leaderboard", params={"tag": "juniors", "limit": 1, "offset": 1}, headers=org.member
    )
    assert [(e["Rank"], e["Name"]) for e in page.json()] == [(2, "A")]
    around = await world.client.get(
        "/leaderboard", params={"tag": "juniors", "around": a["Id"], "limit": 1}, headers=org.member
    )
    assert [(e["Rank"], e["Name"]) for e in around.json()] == [(2, "A")]
    outside = await world.client.get(
        "/leaderboard", params={"tag": "juniors", "around": b["Id"]}, headers=org.member
    )
    assert outside.status_code == 422
    nobody = await world.client.get("/leaderboard", params={"tag": "none"}, headers=org.member)
    assert nobody.json() == []
    graph = await world.client.get(
        "/leaderboard/graph", params={"tag": "juniors"}, headers=org.member
    )
    assert [s["Name"] for s in graph.json()] == ["C", "A"]
    csv = await world.client.get(
        "/leaderboard", params={"tag": "juniors"}, headers={**org.member, "Accept": "text/csv"}
    )
    assert [line.split(",")[2] for line in csv.text.splitlines()[1:]] == ["C", "A"]
    for bad in ("", "x" * 51):
        refused = await world.client.get("/leaderboard", params={"tag": bad}, headers=org.member)
        assert refused.status_code == 422


async def test_a_bracket_is_cached_apart_and_follows_writes(world: World) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20])
    a = await org.create_team("A", tags=["red"])
    b = await org.create_team("B", tags=["blue"])
    first = await world.client.get("/leaderboard", params={"tag": "red"}, headers=org.member)
    etag = first.headers["ETag"]
    same = await world.client.get(
        "/leaderboard", params={"tag": "red"}, headers={**org.member, "If-None-Match": etag}
    )
    assert same.status_code == 304
    await complete(org, a["Id"], tasks[0])
    await complete(org, b["Id"], tasks[1])
    after = await world.client.get("/leaderboard", params={"tag": "red"}, headers=org.member)
    assert after.headers["ETag"] != etag
    assert [(e["Name"], e["Score"]) for e in after.json()] == [("A", 10)]
    blue = await world.client.get("/leaderboard", params={"tag": "blue"}, headers=org.member)
    assert [(e["Name"], e["Score"]) for e in blue.json()] == [("B", 20)]

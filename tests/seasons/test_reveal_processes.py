"""A season's freeze and reveal on live server processes (two ``questline serve`` on one
PostgreSQL database; one on SQLite): during the freeze, a member's cached standings hold
still on every process while completions arrive through another one, and their own
team's progress is live; the reveal's version reaches every process, whose next reads
(and revalidations of the frozen ``ETag``) get the live standings, with no other write
and long before the season's end."""

from __future__ import annotations

import asyncio
import datetime as dt

import httpx
import pytest

from tests.factories import Org, World
from tests.leaderboard.test_stream import complete, servers, setup_org
from tests.seasons.support import iso, now
from tests.support.live import LiveServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

__all__ = ["servers"]  # the fixture, shared with the leaderboard's stream tests

FROZEN = "Questline-Frozen-At"
POLL_SECONDS = 0.02
POLLS = 1_500
"""How often a process is asked before the test gives up (a hang guard, 30 s: the
design's bound is ``readmodel.sources.STALE_AFTER`` after the writer's send)."""


async def standings(
    url: str, headers: dict[str, str], season: str, **params: str
) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, headers=headers) as client:
        response = await client.get("/leaderboard", params={"season": season, **params})
    assert response.status_code == 200, response.text
    return response


def scores(response: httpx.Response) -> list[tuple[str, int]]:
    return [(e["Name"], e["Score"]) for e in response.json()]


async def first_live(url: str, org: Org, season: str, frozen: httpx.Response) -> httpx.Response:
    """Ask ``url`` as a member until it answers the live standings; every answer before
    is the frozen one."""
    for _ in range(POLLS):
        response = await standings(url, org.member, season)
        if FROZEN not in response.headers:
            return response
        assert response.json() == frozen.json()
        await asyncio.sleep(POLL_SECONDS)
    raise AssertionError(f"{url} kept the frozen standings after the reveal")


async def test_the_freeze_holds_and_the_reveal_reaches_every_process(
    world: World, servers: list[LiveServer]
) -> None:
    org = world.org()
    urls = [server.url for server in servers]
    reader_url, writer_url = urls[0], urls[-1]
    teams, tasks = await setup_org(writer_url, org)
    ants, bees = teams[0]["Id"], teams[1]["Id"]
    await complete(writer_url, org, ants, tasks[1])
    async with httpx.AsyncClient(base_url=writer_url, headers=org.admin) as client:
        created = await client.post(
            "/season",
            json={
                "Name": "Cup",
                "StartsAt": iso(now() - dt.timedelta(days=1)),
                "FreezesAt": iso(now()),
                "EndsAt": iso(now() + dt.timedelta(days=1)),
            },
        )
        assert created.status_code == 201, created.text
    season = created.json()["Id"]

    before: dict[str, httpx.Response] = {}
    for url in urls:
        before[url] = await standings(url, org.member, season)
        assert before[url].headers[FROZEN] == created.json()["FreezesAt"]
        assert scores(before[url]) == [("Ants", 5), ("Bees", 0)]
    etag = before[reader_url].headers["ETag"]
    assert {r.headers["ETag"] for r in before.values()} == {etag}

    # Completions arrive through the writer: members' standings stay as they were on
    # every process, the team's own progress moves.
    await complete(writer_url, org, bees, tasks[0])
    await complete(writer_url, org, bees, tasks[2])
    for url in urls:
        again = await standings(url, org.member, season)
        assert again.json() == before[url].json()
        assert again.headers[FROZEN] == created.json()["FreezesAt"]
        async with httpx.AsyncClient(base_url=url, headers=org.member) as client:
            overview = await client.get(f"/team/{bees}/overview", params={"season": season})
            assert overview.status_code == 200, overview.text
            assert overview.json()["Score"] == 11
            assert overview.json()["Rank"] == 2  # the frozen rank
            progress = await client.get(f"/team/{bees}/progress")
            assert {c["TaskId"] for c in progress.json()} == {tasks[0], tasks[2]}
        admin = await standings(url, org.admin, season)
        assert FROZEN not in admin.headers
        assert scores(admin) == [("Bees", 11), ("Ants", 5)]

    async with httpx.AsyncClient(base_url=writer_url, headers=org.admin) as client:
        revealed = await client.post(f"/season/{season}/reveal")
        assert revealed.status_code == 200, revealed.text
    # The writer's own process answers from the reveal's version at once.
    async with httpx.AsyncClient(base_url=writer_url, headers=org.member) as client:
        revalidated = await client.get(
            "/leaderboard", params={"season": season}, headers={"If-None-Match": etag}
        )
    assert revalidated.status_code == 200
    assert FROZEN not in revalidated.headers
    assert scores(revalidated) == [("Bees", 11), ("Ants", 5)]
    for url in urls:
        live = await first_live(url, org, season, before[url])
        assert live.json() == revalidated.json()
        # From then on, every read there is the live one; the members' view is no more.
        assert (await standings(url, org.member, season)).json() == revalidated.json()
        asked_frozen = await standings(url, org.admin, season, frozen="true")
        assert FROZEN not in asked_frozen.headers
        assert asked_frozen.json() == revalidated.json()

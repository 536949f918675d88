"""Concurrent and retried requests lose and duplicate nothing."""

from __future__ import annotations

import asyncio

import pytest

from tests.factories import World

pytestmark = pytest.mark.anyio


async def test_twenty_parallel_adds_of_one_email_make_one_member(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    responses = await asyncio.gather(
        *(org.add_member(team["Id"], email="same@example.org") for _ in range(20))
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 19 + [201], [r.text for r in responses if r.status_code >= 400]
    assert len({r.json()["Id"] for r in responses}) == 1
    members = (await world.client.get("/member", headers=org.admin)).json()
    assert len(members) == 1
    listed = (await world.client.get(f"/team/{team['Id']}/members", headers=org.admin)).json()
    assert len(listed) == 1


async def test_retried_admin_switch_with_one_key_flips_once(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    url = f"/team/{team['Id']}/isadminteam"
    headers = {**org.admin, "Idempotency-Key": "switch-1"}
    responses = [await world.client.post(url, headers=headers) for _ in range(3)]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert [r.json()["IsAdminTeam"] for r in responses] == [True, True, True]
    assert [r.headers.get("Idempotent-Replayed") for r in responses] == [None, "true", "true"]
    assert (await org.teams())[0]["IsAdminTeam"] is True


async def test_concurrent_retries_of_one_switch_flip_once(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    url = f"/team/{team['Id']}/isadminteam"
    headers = {**org.admin, "Idempotency-Key": "switch-parallel"}
    responses = await asyncio.gather(*(world.client.post(url, headers=headers) for _ in range(5)))
    assert {r.status_code for r in responses} == {200}
    assert {r.json()["IsAdminTeam"] for r in responses} == {True}
    assert (await org.teams())[0]["IsAdminTeam"] is True


async def test_distinct_switches_in_parallel_each_count(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    url = f"/team/{team['Id']}/isadminteam"
    responses = await asyncio.gather(*(world.client.post(url, headers=org.admin) for _ in range(4)))
    assert {r.status_code for r in responses} == {200}
    assert (await org.teams())[0]["IsAdminTeam"] is False  # four flips


async def test_two_parallel_creations_of_one_name_make_one_team(world: World) -> None:
    org = world.org()
    responses = await asyncio.gather(
        *(world.client.post("/team", json={"name": "Twin"}, headers=org.admin) for _ in range(2))
    )
    assert sorted(r.status_code for r in responses) == [201, 409]
    conflict = next(r for r in responses if r.status_code == 409)
    assert conflict.headers["content-type"] == "application/problem+json"
    assert [t["Name"] for t in await org.teams()] == ["Twin"]


async def test_retried_creation_with_one_key_creates_once(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "Idempotency-Key": "create-1"}
    responses = await asyncio.gather(
        *(world.client.post("/team", json={"name": "Once"}, headers=headers) for _ in range(3))
    )
    assert [r.status_code for r in responses] == [201, 201, 201]
    assert len({r.json()["Id"] for r in responses}) == 1
    assert len({r.headers["Location"] for r in responses}) == 1
    assert [t["Name"] for t in await org.teams()] == ["Once"]


async def test_concurrent_patches_with_one_etag_one_wins(world: World) -> None:
    org = world.org()
    team = await org.create_team("Start")
    etag = (await world.client.get(f"/team/{team['Id']}", headers=org.admin)).headers["ETag"]
    responses = await asyncio.gather(
        *(
            world.client.patch(
                f"/team/{team['Id']}",
                json={"Name": name},
                headers={**org.admin, "If-Match": etag},
            )
            for name in ("Left", "Right")
        )
    )
    assert sorted(r.status_code for r in responses) == [200, 412]
    winner = next(r for r in responses if r.status_code == 200).json()["Name"]
    assert [t["Name"] for t in await org.teams()] == [winner]

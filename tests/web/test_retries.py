"""Retried and concurrent requests with one ``Idempotency-Key``, in one process (the
two-process case is in test_faults.py): replayed, never applied twice."""

from __future__ import annotations

import anyio
import pytest

from tests.factories import World

pytestmark = pytest.mark.anyio


async def test_a_retried_switch_is_replayed_not_flipped_again(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    headers = {**org.admin, "Idempotency-Key": "switch-1"}
    url = f"/team/{team['Id']}/isadminteam"
    first = await world.client.post(url, headers=headers)
    retried = await world.client.post(url, headers=headers)
    assert first.status_code == retried.status_code == 200
    assert retried.headers["Idempotent-Replayed"] == "true"
    assert retried.content == first.content
    assert retried.headers["ETag"] == first.headers["ETag"]
    detail = await world.client.get(f"/team/{team['Id']}", headers=org.member)
    assert detail.json()["IsAdminTeam"] is True


async def test_concurrent_creations_with_one_key_create_one_team(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "Idempotency-Key": "create-1"}
    responses = []

    async def create() -> None:
        responses.append(await world.client.post("/team", json={"name": "Once"}, headers=headers))

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(create)
    assert [r.status_code for r in responses] == [201] * 5
    assert len({r.json()["Id"] for r in responses}) == 1
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in responses) == 4
    assert [t["Name"] for t in await org.teams()] == ["Once"]

"""Who sees and changes which discipline: organizations, roles, global disciplines."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.disciplines.factories import create_discipline, discipline_document
from tests.factories import World, bearer

pytestmark = pytest.mark.anyio


async def _snapshot(world: World, headers: dict[str, str], discipline_id: str) -> Any:
    response = await world.client.get(f"/discipline/{discipline_id}", headers=headers)
    assert response.status_code == 200
    return response.json(), response.headers["ETag"]


async def test_another_organization_gets_404_on_every_discipline_route(world: World) -> None:
    owner, stranger = world.org(), world.org()
    discipline = await create_discipline(world.client, owner.admin, levels=1)
    before = await _snapshot(world, owner.member, discipline["Id"])
    url = f"/discipline/{discipline['Id']}"
    # An admin learns nothing (404); a member is refused any write first (403).
    for headers, write_status in ((stranger.admin, 404), (stranger.member, 403)):
        assert (await world.client.get(url, headers=headers)).status_code == 404
        put = await world.client.put(url, json=discipline_document(levels=0), headers=headers)
        assert put.status_code == write_status
        delete = await world.client.delete(url, headers=headers)
        assert delete.status_code == write_status
        forced = await world.client.delete(f"{url}?force=true", headers=headers)
        assert forced.status_code == write_status
        listed = await world.client.get("/discipline", headers=headers)
        assert listed.json() == []
    assert await _snapshot(world, owner.member, discipline["Id"]) == before


async def test_unknown_or_malformed_ids_are_404(world: World) -> None:
    org = world.org()
    for path in (f"/discipline/{uuid.uuid4()}", "/discipline/not-a-uuid"):
        assert (await world.client.get(path, headers=org.member)).status_code == 404
        put = await world.client.put(path, json=discipline_document(), headers=org.admin)
        assert put.status_code == 404
        assert (await world.client.delete(path, headers=org.admin)).status_code == 404


async def test_no_token_is_401(world: World) -> None:
    for method, path in [("GET", "/discipline"), ("POST", "/discipline")]:
        response = await world.client.request(method, path, json={"Title": "T"})
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_member_token_cannot_write(world: World) -> None:
    org = world.org()
    discipline = await create_discipline(world.client, org.admin, levels=1)
    before = await _snapshot(world, org.member, discipline["Id"])
    url = f"/discipline/{discipline['Id']}"
    post = await world.client.post("/discipline", json=discipline_document(), headers=org.member)
    assert post.status_code == 403
    put = await world.client.put(url, json=discipline_document(levels=0), headers=org.member)
    assert put.status_code == 403
    assert (await world.client.delete(url, headers=org.member)).status_code == 403
    assert await _snapshot(world, org.member, discipline["Id"]) == before
    listed = await world.client.get("/discipline", headers=org.member)
    assert [d["Id"] for d in listed.json()] == [discipline["Id"]]


async def test_organization_id_decides_the_owner(world: World) -> None:
    org, other = world.org(), world.org()
    own = await world.client.post(
        "/discipline",
        json={"Title": "T", "Description": "D", "OrganizationId": str(org.id)},
        headers=org.admin,
    )
    assert own.status_code == 201
    assert own.json()["OrganizationId"] == str(org.id)
    foreign = await world.client.post(
        "/discipline",
        json={"Title": "T", "Description": "D", "OrganizationId": str(other.id)},
        headers=org.admin,
    )
    assert foreign.status_code == 403
    global_by_admin = await world.client.post(
        "/discipline",
        json={"Title": "T", "Description": "D", "OrganizationId": None},
        headers=org.admin,
    )
    assert global_by_admin.status_code == 403
    assert (await world.client.get("/discipline", headers=other.admin)).json() == []
    listed = (await world.client.get("/discipline", headers=org.admin)).json()
    assert [d["Id"] for d in listed] == [own.json()["Id"]]


async def test_operators_manage_global_disciplines_and_admins_only_read_them(
    world: World,
) -> None:
    org = world.org()
    operator = bearer(world.operator_token())
    made = await world.client.post("/discipline", json=discipline_document(), headers=operator)
    assert made.status_code == 201, made.text
    glob = made.json()
    assert glob["OrganizationId"] is None
    url = f"/discipline/{glob['Id']}"
    before = await _snapshot(world, org.member, glob["Id"])
    assert before[0] == glob
    for headers in (org.admin, org.member):
        put = await world.client.put(url, json=discipline_document(levels=0), headers=headers)
        assert put.status_code == 403
        assert (await world.client.delete(url, headers=headers)).status_code == 403
    assert await _snapshot(world, org.member, glob["Id"]) == before
    replaced = await world.client.put(url, json=discipline_document(levels=0), headers=operator)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["Levels"] == []
    assert (await world.client.delete(url, headers=operator)).status_code == 204
    assert (await world.client.get(url, headers=org.member)).status_code == 404


async def test_operators_neither_see_nor_create_organization_disciplines(world: World) -> None:
    org = world.org()
    operator = bearer(world.operator_token())
    own = await create_discipline(world.client, org.admin, levels=1)
    url = f"/discipline/{own['Id']}"
    assert (await world.client.get(url, headers=operator)).status_code == 404
    put = await world.client.put(url, json=discipline_document(), headers=operator)
    assert put.status_code == 404
    assert (await world.client.delete(url, headers=operator)).status_code == 404
    assert (await world.client.get("/discipline", headers=operator)).json() == []
    into_org = await world.client.post(
        "/discipline",
        json={"Title": "T", "Description": "D", "OrganizationId": str(org.id)},
        headers=operator,
    )
    assert into_org.status_code == 403
    assert (await _snapshot(world, org.member, own["Id"]))[0] == own

"""Every input error of DESIGN §2 that the team endpoints can meet: a problem document
that names the field, and nothing written."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.factories import Org, World

pytestmark = pytest.mark.anyio


def _fields(response: Any) -> list[str]:
    return [e["field"] for e in response.json()["errors"]]


async def _assert_problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = dict(response.json())
    assert {"type", "title", "status", "detail", "instance", "requestId"} <= set(body)
    assert body["status"] == status
    assert body["requestId"] == response.headers["X-Request-Id"]
    return body


async def _nothing_created(org: Org) -> None:
    assert await org.teams() == []


async def test_malformed_json_is_400(world: World) -> None:
    org = world.org()
    response = await world.client.post(
        "/team",
        content=b'{"name": "x",',
        headers={**org.admin, "Content-Type": "application/json"},
    )
    body = await _assert_problem(response, 400)
    assert "JSON" in body["detail"]
    await _nothing_created(org)


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["name"]),
        ({"name": ""}, ["name"]),
        ({"name": "   "}, ["name"]),
        ({"name": "x" * 101}, ["name"]),
        ({"name": "ok", "colour": "red"}, ["colour"]),
        ({"name": "ok", "tags": "a,b"}, ["tags"]),
        ({"name": "ok", "tags": [""]}, ["tags[0]"]),
        ({"name": "ok", "tags": [f"t{i}" for i in range(21)]}, ["tags"]),
        ({"name": "ok", "members": ["not-a-uuid"]}, ["members[0]"]),
        ({"name": 5}, ["name"]),
    ],
)
async def test_invalid_team_input_is_422_naming_the_field(
    world: World, body: dict[str, Any], fields: list[str]
) -> None:
    org = world.org()
    response = await world.client.post("/team", json=body, headers=org.admin)
    await _assert_problem(response, 422)
    assert _fields(response) == fields
    await _nothing_created(org)


async def test_a_json_array_instead_of_an_object_is_422(world: World) -> None:
    org = world.org()
    response = await world.client.post("/team", json=[{"name": "x"}], headers=org.admin)
    await _assert_problem(response, 422)


async def test_duplicate_team_name_ignores_case_and_is_409(world: World) -> None:
    org = world.org()
    await org.create_team("Rockets")
    response = await world.client.post("/team", json={"name": "ROCKETS "}, headers=org.admin)
    body = await _assert_problem(response, 409)
    assert "Rockets" in body["detail"] or "ROCKETS" in body["detail"]
    assert [t["Name"] for t in await org.teams()] == ["Rockets"]
    other = await org.create_team("Other")
    rename = await world.client.patch(
        f"/team/{other['Id']}", json={"Name": "rockets"}, headers=org.admin
    )
    await _assert_problem(rename, 409)


async def test_same_name_in_another_organization_is_fine(world: World) -> None:
    await world.org().create_team("Rockets")
    await world.org().create_team("Rockets")


async def test_unknown_member_ids_are_422_listing_each(world: World) -> None:
    org = world.org()
    known = await org.create_member()
    teams_before = await org.teams()
    missing = [str(uuid.uuid4()), str(uuid.uuid4())]
    stranger = await world.org().create_member()
    response = await world.client.post(
        "/team",
        json={"name": "x", "members": [known["Id"], missing[0], stranger["Id"], missing[1]]},
        headers=org.admin,
    )
    await _assert_problem(response, 422)
    assert _fields(response) == ["members[1]", "members[2]", "members[3]"]
    assert await org.teams() == teams_before


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"email": "not-an-email", "givenName": "A"}, ["email"]),
        ({"email": "a@b.org"}, ["givenName"]),
        ({"givenName": "A"}, ["email"]),
        ({"email": "a@b.org", "givenName": ""}, ["givenName"]),
        ({"email": "a@b.org", "givenName": "A", "role": "boss"}, ["role"]),
    ],
)
async def test_invalid_member_input_is_422(
    world: World, body: dict[str, Any], fields: list[str]
) -> None:
    org = world.org()
    team = await org.create_team()
    response = await world.client.post(f"/team/{team['Id']}/members", json=body, headers=org.admin)
    await _assert_problem(response, 422)
    assert _fields(response) == fields
    assert (await world.client.get("/member", headers=org.admin)).json() == []


async def test_oversized_body_is_413(world: World) -> None:
    org = world.org()
    huge = {"name": "x", "tags": ["a" * 1024] * 6000}
    response = await world.client.post("/team", json=huge, headers=org.admin)
    await _assert_problem(response, 413)
    await _nothing_created(org)


async def test_oversized_streamed_body_without_length_is_413(world: World) -> None:
    org = world.org()

    async def chunks() -> Any:
        yield b'{"name": "x", "tags": ["'
        for _ in range(6 * 1024):
            yield b"a" * 1024
        yield b'"]}'

    response = await world.client.post(
        "/team", content=chunks(), headers={**org.admin, "Content-Type": "application/json"}
    )
    await _assert_problem(response, 413)
    await _nothing_created(org)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_non_json_body_is_415(world: World, content_type: str | None) -> None:
    org = world.org()
    headers = dict(org.admin)
    if content_type:
        headers["Content-Type"] = content_type
    response = await world.client.post("/team", content=b'{"name": "x"}', headers=headers)
    await _assert_problem(response, 415)
    await _nothing_created(org)


async def test_unknown_route_and_method_are_problems(world: World) -> None:
    org = world.org()
    await _assert_problem(await world.client.get("/nowhere", headers=org.admin), 404)
    await _assert_problem(await world.client.put("/team", json={}, headers=org.admin), 405)


async def test_reusing_an_idempotency_key_with_another_body_is_422(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "Idempotency-Key": "k-1"}
    first = await world.client.post("/team", json={"name": "A"}, headers=headers)
    assert first.status_code == 201
    second = await world.client.post("/team", json={"name": "B"}, headers=headers)
    await _assert_problem(second, 422)
    assert [t["Name"] for t in await org.teams()] == ["A"]


@pytest.mark.parametrize("name", ["nul\u0000byte", "bell\u0007"])
async def test_control_characters_in_text_are_422(world: World, name: str) -> None:
    org = world.org()
    response = await world.client.post("/team", json={"name": name}, headers=org.admin)
    await _assert_problem(response, 422)
    assert _fields(response) == ["name"]
    tagged = await world.client.post(
        "/team", json={"name": "ok", "tags": [name]}, headers=org.admin
    )
    await _assert_problem(tagged, 422)
    await _nothing_created(org)

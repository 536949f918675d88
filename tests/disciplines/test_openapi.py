"""The published JSON Schema of the document, its copyable examples, conditional GET."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import World

pytestmark = pytest.mark.anyio


async def _spec(world: World) -> dict[str, Any]:
    response = await world.client.get("/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


async def test_the_full_document_schema_is_published_with_its_limits(world: World) -> None:
    schemas = (await _spec(world))["components"]["schemas"]
    create = schemas["DisciplineCreate"]
    assert create["required"] == ["Title", "Description"]
    assert create["properties"]["Levels"]["maxItems"] == 100
    assert create["properties"]["Resources"]["maxItems"] == 50
    assert create["examples"][0]["Levels"]
    level = schemas["LevelInput"]["properties"]
    assert level["Quests"]["maxItems"] == 100
    task = schemas["TaskInput"]["properties"]
    assert (task["Points"]["minimum"], task["Points"]["maximum"]) == (0, 1_000_000)
    assert task["Points"]["default"] == 10
    assert schemas["QuestInput"]["properties"]["Tasks"]["maxItems"] == 100
    resource = schemas["ResourceInput"]["properties"]
    assert resource["Kind"]["default"] == "Link"
    assert resource["Url"]["format"] == "uri"
    assert set(schemas["Color"]["enum"]) == {"Purple", "Green", "Red"}
    out = schemas["Discipline"]["properties"]
    assert {"Id", "Title", "Description", "OrganizationId", "Color", "Levels", "Resources"} <= set(
        out
    )


async def test_the_published_examples_can_be_sent_as_they_are(world: World) -> None:
    org = world.org()
    spec = await _spec(world)
    post = spec["paths"]["/discipline"]["post"]["requestBody"]["content"]["application/json"]
    assert set(post["examples"]) == {"basic", "full"}
    for name, example in post["examples"].items():
        response = await world.client.post("/discipline", json=example["value"], headers=org.admin)
        assert response.status_code == 201, (name, response.text)
    full = response.json()
    assert [lv["Title"] for lv in full["Levels"]] == ["Foundations", "Shipping"]
    put = spec["paths"]["/discipline/{discipline_id}"]["put"]["requestBody"]["content"]
    replaced = await world.client.put(
        f"/discipline/{full['Id']}",
        json=put["application/json"]["examples"]["full"]["value"],
        headers=org.admin,
    )
    assert replaced.status_code == 200, replaced.text


async def test_get_with_a_current_etag_is_304(world: World) -> None:
    org = world.org()
    created = await world.client.post(
        "/discipline", json={"Title": "T", "Description": "D"}, headers=org.admin
    )
    url = created.headers["Location"]
    etag = created.headers["ETag"]
    unchanged = await world.client.get(url, headers={**org.member, "If-None-Match": etag})
    assert unchanged.status_code == 304
    assert unchanged.content == b""
    await world.client.put(url, json={"Title": "T2", "Description": "D"}, headers=org.admin)
    changed = await world.client.get(url, headers={**org.member, "If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.json()["Title"] == "T2"
    assert changed.headers["ETag"] != etag

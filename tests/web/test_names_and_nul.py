"""NUL characters refused once, at the boundary, in every JSON body (a raw byte or a
``\\u0000`` escape, in a key or a value: 422 naming the field), and names and titles
without control, zero-width or bidi-override characters. Every refusal changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.factories import World, unique

pytestmark = pytest.mark.anyio

INVISIBLE = {
    "tab": "Rock\tets",
    "line feed": "Rock\nets",
    "carriage return": "Rock\rets",
    "C0 (bell)": "Rock\x07ets",
    "C1 (next line)": "Rock\x85ets",
    "zero-width space": "Rock\u200bets",
    "zero-width joiner": "Rock\u200dets",
    "right-to-left override": "\u202eRockets",
    "left-to-right isolate": "Rock\u2066ets",
    "byte order mark": "Rockets\ufeff",
    "line separator": "Rock\u2028ets",
}


def _discipline(title: str = "Guide", task_title: str = "Read") -> dict[str, Any]:
    task = {"Title": task_title, "Points": 5}
    return {
        "Title": title,
        "Description": "D",
        "Levels": [{"Title": "Level", "Quests": [{"Title": "Quest", "Tasks": [task]}]}],
    }


def _escaped(document: dict[str, Any], target: str) -> bytes:
    """The JSON text of ``document`` with ``target`` strings written with a NUL escape."""
    text = json.dumps(document)
    return text.replace(target, target[:1] + "\\u0000" + target[1:]).encode()


def _raw(document: dict[str, Any], target: str) -> bytes:
    return json.dumps(document).replace(target, target[:1] + "\x00" + target[1:]).encode()


async def _post(world: World, path: str, body: bytes, headers: dict[str, str]) -> Any:
    return await world.client.post(
        path, content=body, headers={**headers, "content-type": "application/json"}
    )


@pytest.mark.parametrize("encode", [_escaped, _raw], ids=["escape", "raw byte"])
async def test_nul_in_any_json_body_is_422_naming_the_field(world: World, encode: Any) -> None:
    org = world.org()
    team = await org.create_team("Anchors")
    created = await world.client.post("/discipline", json=_discipline(), headers=org.admin)
    assert created.status_code == 201
    document = created.json()
    before_teams = await org.teams()

    cases: list[tuple[str, str, bytes, str]] = [
        ("POST", "/team", encode({"name": "Rockets"}, "Rockets"), "name"),
        ("POST", "/team", encode({"name": "Ok", "tags": ["Blue"]}, "Blue"), "tags[0]"),
        ("PATCH", f"/team/{team['Id']}", encode({"Name": "Other"}, "Other"), "Name"),
        (
            "POST",
            f"/team/{team['Id']}/members",
            encode({"email": "ada@example.org", "givenName": "Ada"}, "Ada"),
            "givenName",
        ),
        (
            "POST",
            "/discipline",
            encode(_discipline(task_title="Deepest"), "Deepest"),
            "Levels[0].Quests[0].Tasks[0].Title",
        ),
        (
            "PUT",
            f"/discipline/{document['Id']}",
            encode({**document, "Description": "Changed"}, "Changed"),
            "Description",
        ),
        ("POST", "/team/bulk", encode([{"name": "Bulky"}], "Bulky"), "[0].name"),
        ("POST", "/webhook", encode({"Url": "https://hooks.example.org/x"}, "hooks"), "Url"),
    ]
    for method, path, body, field in cases:
        response = await world.client.request(
            method, path, content=body, headers={**org.admin, "content-type": "application/json"}
        )
        assert response.status_code == 422, (method, path, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        problem = response.json()
        assert "NUL" in problem["detail"]
        assert [e["field"] for e in problem["errors"]] == [field], (path, problem)

    # A key with a NUL is named too (with the escape written out).
    response = await _post(world, "/team", encode({"name": "x", "Zed": 1}, "Zed"), org.admin)
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "Z\\u0000ed"
    # Nothing changed.
    assert await org.teams() == before_teams
    again = await world.client.get(f"/discipline/{document['Id']}", headers=org.admin)
    assert again.json()["Description"] == document["Description"]


async def test_nul_is_refused_before_sign_in_too(world: World) -> None:
    response = await world.client.post(
        "/auth/session",
        content=b'{"Code": "abc\\u0000def"}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "Code"


async def test_an_escaped_backslash_before_u0000_is_text_not_nul(world: World) -> None:
    org = world.org()
    # JSON "a\\u0000" is the six characters a, \, u, 0, 0, 0, 0: no NUL.
    response = await _post(world, "/team", b'{"name": "a\\\\u0000"}', org.admin)
    assert response.status_code == 201, response.text
    assert response.json()["Name"] == "a\\u0000"
    # Three backslashes: an escaped backslash, then a NUL escape.
    response = await _post(world, "/team", b'{"name": "b\\\\\\u0000"}', org.admin)
    assert response.status_code == 422, response.text


async def test_a_large_body_with_nul_is_refused_the_same_way(world: World) -> None:
    """Bodies past 64 KiB are checked in a worker thread: same answer."""
    org = world.org()
    document = _discipline(task_title="Deepest")
    document["Description"] = "x" * 100_000
    response = await _post(world, "/discipline", _escaped(document, "Deepest"), org.admin)
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "Levels[0].Quests[0].Tasks[0].Title"
    listed = await world.client.get("/discipline", headers=org.admin)
    assert all(d["Title"] != "Guide" for d in listed.json() if d["OrganizationId"])


@pytest.mark.parametrize("name", list(INVISIBLE.values()), ids=list(INVISIBLE))
async def test_names_refuse_control_and_invisible_characters(world: World, name: str) -> None:
    org = world.org()
    team = await org.create_team(unique("Keep"))
    refused = [
        await world.client.post("/team", json={"name": name}, headers=org.admin),
        await world.client.post(
            "/team", json={"name": "Tagged", "tags": [name]}, headers=org.admin
        ),
        await world.client.patch(f"/team/{team['Id']}", json={"Name": name}, headers=org.admin),
        await org.add_member(team["Id"], given_name=name),
        await world.client.post("/discipline", json=_discipline(title=name), headers=org.admin),
        await world.client.post(
            "/discipline", json=_discipline(task_title=name), headers=org.admin
        ),
    ]
    for response in refused:
        assert response.status_code == 422, (response.request.url, response.text)
        assert response.json()["errors"], response.text
    assert [t["Name"] for t in await org.teams()] == [team["Name"]]
    members = await world.client.get(f"/team/{team['Id']}/members", headers=org.admin)
    assert members.json() == []


async def test_descriptions_keep_line_breaks_and_tabs(world: World) -> None:
    """Descriptions are prose, not names: tab and line breaks stay (other controls go)."""
    org = world.org()
    document = _discipline()
    document["Description"] = "Line one.\nLine two:\tindented."
    created = await world.client.post("/discipline", json=document, headers=org.admin)
    assert created.status_code == 201, created.text
    assert created.json()["Description"] == "Line one.\nLine two:\tindented."
    document["Description"] = "Bell\x07"
    refused = await world.client.post("/discipline", json=document, headers=org.admin)
    assert refused.status_code == 422
    [error] = refused.json()["errors"]
    assert error == {
        "field": "Description",
        "message": "Control characters are not accepted (only tab and line breaks, in prose).",
    }

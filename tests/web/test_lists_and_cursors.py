"""Lists beyond the seed's contract are always paged; cursors are opaque tokens the
service signed; links never reflect the ``Host`` header; members see no e-mails."""

from __future__ import annotations

import base64
import json

import pytest

from tests.factories import World
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def _members(world: World, count: int) -> tuple[dict[str, str], str]:
    org = world.org()
    rows = "".join(f"Crew,m{i:04d}@example.org,M{i},\r\n" for i in range(count))
    created = await world.client.post(
        "/team/bulk",
        content=("team,email,givenName,tags\r\n" + rows).encode(),
        headers={**org.admin, "content-type": "text/csv"},
    )
    assert created.status_code == 201, created.text
    return org.admin, created.json()[0]["Id"]


async def test_member_lists_have_a_default_and_a_maximum_page_size(world: World) -> None:
    admin, team_id = await _members(world, 120)
    for path in ("/member", f"/team/{team_id}/members"):
        first = await world.client.get(path, headers=admin)
        assert first.status_code == 200
        assert len(first.json()) == 100, path
        link = first.headers["Link"]
        second = await world.client.get(link[1 : link.index(">")], headers=admin)
        assert len(second.json()) == 20
        assert "Link" not in second.headers
        seen = {m["Id"] for m in first.json()} | {m["Id"] for m in second.json()}
        assert len(seen) == 120
        too_many = await world.client.get(f"{path}?limit=1001", headers=admin)
        assert too_many.status_code == 422


async def test_members_see_names_not_emails(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    await org.add_member(team["Id"], email="ada@example.org", given_name="Ada")
    for path in ("/member", f"/team/{team['Id']}/members", f"/team/{team['Id']}"):
        as_member = (await world.client.get(path, headers=org.member)).json()
        as_admin = (await world.client.get(path, headers=org.admin)).json()
        members = as_member["Members"] if isinstance(as_member, dict) else as_member
        admins_view = as_admin["Members"] if isinstance(as_admin, dict) else as_admin
        assert [m["GivenName"] for m in members] == ["Ada"]
        assert [m["Email"] for m in members] == [None], path
        assert [m["Email"] for m in admins_view] == ["ada@example.org"]
        assert "ada@example.org" not in json.dumps(as_member)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


async def test_crafted_cursors_are_422_never_500(world: World) -> None:
    org = world.org()
    for index in range(3):
        await org.create_team(f"T{index}")
    first = await world.client.get("/team?limit=1", headers=org.member)
    link = first.headers["Link"]
    issued = link[link.index("after=") + len("after=") : link.index(">")]
    payload, mac = issued.split(".")
    crafted = [
        "not-base64!!",
        _b64(b"\xff\xfe\xfd"),
        _b64(b"\x00\x00"),
        _b64(json.dumps(["x", "\u0000"]).encode()),
        _b64(json.dumps({"a": 1}).encode()),
        _b64(json.dumps(["T0", "not-a-uuid"]).encode()),
        f"{_b64(json.dumps(['T9', '00000000-0000-0000-0000-000000000000']).encode())}.{mac}",
        f"{payload}.{_b64(b'0' * 12)}",
        f"{payload}.",
        "%00",
    ]
    for cursor in crafted:
        response = await world.client.get(
            "/team", params={"limit": "1", "after": cursor}, headers=org.member
        )
        assert response.status_code == 422, (cursor, response.text)
    followed = await world.client.get(
        "/team", params={"limit": "1", "after": issued}, headers=org.member
    )
    assert followed.status_code == 200
    assert [t["Name"] for t in followed.json()] != [t["Name"] for t in first.json()]


async def test_after_without_limit_lists_the_rest(world: World) -> None:
    org = world.org()
    for index in range(3):
        await org.create_team(f"T{index}")
    first = await world.client.get("/team?limit=1", headers=org.member)
    link = first.headers["Link"]
    issued = link[link.index("after=") + len("after=") : link.index(">")]
    rest = await world.client.get("/team", params={"after": issued}, headers=org.member)
    assert rest.status_code == 200, rest.text
    assert len(rest.json()) == 2


async def test_links_are_relative_or_on_the_public_url_never_on_the_host_header(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    evil = {"Host": "evil.example"}
    created = await world.client.post("/team", json={"name": "A"}, headers={**org.admin, **evil})
    assert created.status_code == 201
    assert created.headers["Location"] == f"/team/{created.json()['Id']}"
    await org.create_team("B")
    page = await world.client.get("/team?limit=1", headers={**org.member, **evil})
    assert page.headers["Link"].startswith("</team?limit=1&after=")
    refused = await world.client.post("/team", json={"name": ""}, headers={**org.admin, **evil})
    assert refused.json()["type"] == "/problems/validation-error"

    public = "https://questline.example.org"
    app_state.configure(public_url=public)
    created = await world.client.post("/team", json={"name": "C"}, headers={**org.admin, **evil})
    assert created.headers["Location"] == f"{public}/team/{created.json()['Id']}"
    page = await world.client.get("/team?limit=1", headers={**org.member, **evil})
    assert page.headers["Link"].startswith(f"<{public}/team?limit=1&after=")
    refused = await world.client.post("/team", json={"name": ""}, headers={**org.admin, **evil})
    assert refused.json()["type"] == f"{public}/problems/validation-error"
    assert "evil.example" not in created.headers["Location"] + page.headers["Link"]


async def test_a_bulk_file_of_bad_rows_lists_the_first_100_problems_and_the_total(
    world: World,
) -> None:
    org = world.org()
    rows = "".join(f"Rockets,bad-{i},Ada,\r\n" for i in range(2500))
    response = await world.client.post(
        "/team/bulk",
        content=("team,email,givenName,tags\r\n" + rows).encode(),
        headers={**org.admin, "content-type": "text/csv"},
    )
    assert response.status_code == 422
    problem = response.json()
    assert problem["errorCount"] == 2500
    assert len(problem["errors"]) == 100
    assert problem["errors"][0]["field"] == "line 2: email"
    assert "2500 problems" in problem["detail"]
    items = [{"name": "", "tags": []}] * 300
    as_json = await world.client.post("/team/bulk", json=items, headers=org.admin)
    assert as_json.status_code == 422
    assert as_json.json()["errorCount"] == 300
    assert [e["field"] for e in as_json.json()["errors"][:2]] == ["[0].name", "[1].name"]

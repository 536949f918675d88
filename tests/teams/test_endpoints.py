"""The team endpoints: success paths, every input error, and the admin switch."""

from __future__ import annotations

import uuid

import pytest

from tests.factories import World, unique

pytestmark = pytest.mark.anyio


async def test_create_team_returns_201_location_and_the_seed_fields(world: World) -> None:
    org = world.org()
    member = await org.create_member()
    response = await world.client.post(
        "/team",
        json={"name": "  Rockets  ", "members": [member["Id"]], "tags": ["a", "A", " b "]},
        headers=org.admin,
    )
    assert response.status_code == 201, response.text
    team = response.json()
    assert response.headers["Location"].endswith(f"/team/{team['Id']}")
    assert response.headers["ETag"]
    assert team["Name"] == "Rockets"
    assert team["OrganizationId"] == str(org.id)
    assert team["Status"] == "Active"
    assert team["Tags"] == ["a", "b"]
    assert team["Score"] == 0
    assert team["IsSurveyCompleted"] is False
    assert team["IsAdminTeam"] is False
    assert team["MemberCount"] == 1
    assert team["CreatedAt"].endswith("Z")
    detail = await world.client.get(response.headers["Location"], headers=org.member)
    assert detail.status_code == 200
    assert [m["Id"] for m in detail.json()["Members"]] == [member["Id"]]


async def test_list_teams_has_exactly_the_seed_fields_plus_additive_ones(world: World) -> None:
    org = world.org()
    await org.create_team("beta")
    await org.create_team("Alpha")
    response = await world.client.get("/team", headers=org.member)
    assert response.status_code == 200
    body = response.json()
    assert [t["Name"] for t in body] == ["Alpha", "beta"]
    seed = {"Id", "Name", "OrganizationId", "Status", "Tags", "Score", "IsSurveyCompleted"}
    assert seed <= set(body[0])
    assert set(body[0]) - seed == {"IsAdminTeam", "MemberCount", "CreatedAt"}


async def test_input_names_match_case_insensitively(world: World) -> None:
    org = world.org()
    response = await world.client.post(
        "/team", json={"NAME": "Shouty", "Tags": ["x"]}, headers=org.admin
    )
    assert response.status_code == 201, response.text
    assert response.json()["Tags"] == ["x"]


async def test_paging_walks_every_team_once_with_link_headers(world: World) -> None:
    org = world.org()
    names = [f"T{i:02d}" for i in range(7)]
    for name in names:
        await org.create_team(name)
    seen: list[str] = []
    url: str | None = "/team?limit=3"
    pages = 0
    while url:
        response = await world.client.get(url, headers=org.member)
        assert response.status_code == 200
        seen += [t["Name"] for t in response.json()]
        pages += 1
        link = response.headers.get("Link")
        url = link[1 : link.index(">")] if link else None
    assert seen == names
    assert pages == 3


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=x", "limit=2&after=%%%"])
async def test_bad_paging_parameters_are_422(world: World, query: str) -> None:
    org = world.org()
    response = await world.client.get(f"/team?{query}", headers=org.member)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"


async def test_patch_changes_name_tags_status_with_etag(world: World) -> None:
    org = world.org()
    team = await org.create_team("Old")
    read = await world.client.get(f"/team/{team['Id']}", headers=org.member)
    etag = read.headers["ETag"]
    response = await world.client.patch(
        f"/team/{team['Id']}",
        json={"Name": "New", "Tags": ["t"], "Status": "Archived"},
        headers={**org.admin, "If-Match": etag},
    )
    assert response.status_code == 200, response.text
    assert response.json()["Name"] == "New"
    assert response.json()["Status"] == "Archived"
    assert response.headers["ETag"] != etag
    stale = await world.client.patch(
        f"/team/{team['Id']}", json={"Name": "Newer"}, headers={**org.admin, "If-Match": etag}
    )
    assert stale.status_code == 412
    after = await world.client.get(f"/team/{team['Id']}", headers=org.member)
    assert after.json()["Name"] == "New"


async def test_patch_with_a_bad_status_names_the_field(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    response = await world.client.patch(
        f"/team/{team['Id']}", json={"Status": "Sleeping"}, headers=org.admin
    )
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["Status"]


async def test_archived_team_refuses_new_members(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    await world.client.patch(f"/team/{team['Id']}", json={"Status": "Archived"}, headers=org.admin)
    response = await org.add_member(team["Id"])
    assert response.status_code == 409
    assert (await world.client.get("/member", headers=org.admin)).json() == []


async def test_delete_team_removes_it_but_keeps_members(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    await org.add_member(team["Id"], email="keep@example.org")
    response = await world.client.delete(f"/team/{team['Id']}", headers=org.admin)
    assert response.status_code == 204
    gone = await world.client.get(f"/team/{team['Id']}", headers=org.admin)
    assert gone.status_code == 404
    members = (await world.client.get("/member", headers=org.admin)).json()
    assert [m["Email"] for m in members] == ["keep@example.org"]
    assert members[0]["TeamIds"] == []


async def test_add_member_creates_then_reports_existing_membership(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    first = await org.add_member(team["Id"], email="Ada@Example.org", given_name="Ada")
    assert first.status_code == 201, first.text
    member = first.json()
    assert member["Email"] == "Ada@example.org"  # the domain is normalized
    assert member["GivenName"] == "Ada"
    assert member["TeamIds"] == [team["Id"]]
    assert first.headers["Location"].endswith(f"/member/{member['Id']}")
    again = await org.add_member(team["Id"], email="ada@example.org", given_name="Ada")
    assert again.status_code == 200
    assert again.json()["Id"] == member["Id"]
    other = await org.create_team()
    joined = await org.add_member(other["Id"], email="ADA@example.org")
    assert joined.status_code == 201
    assert sorted(joined.json()["TeamIds"]) == sorted([team["Id"], other["Id"]])
    listed = await world.client.get(f"/team/{team['Id']}/members", headers=org.member)
    assert [m["Id"] for m in listed.json()] == [member["Id"]]
    as_member = await world.client.get(f"/member/{member['Id']}", headers=org.member)
    assert as_member.json()["Email"] is None  # members see names, not e-mails
    assert as_member.json()["GivenName"] == "Ada"
    one = await world.client.get(f"/member/{member['Id']}", headers=org.admin)
    assert one.status_code == 200
    assert one.json()["Email"] == "Ada@example.org"


async def test_remove_member_from_team(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    member = (await org.add_member(team["Id"])).json()
    response = await world.client.delete(
        f"/team/{team['Id']}/members/{member['Id']}", headers=org.admin
    )
    assert response.status_code == 204
    again = await world.client.delete(
        f"/team/{team['Id']}/members/{member['Id']}", headers=org.admin
    )
    assert again.status_code == 404
    assert (await world.client.get(f"/team/{team['Id']}", headers=org.admin)).json()[
        "MemberCount"
    ] == 0


async def test_isadminteam_switches_and_sets(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    url = f"/team/{team['Id']}/isadminteam"
    first = await world.client.post(url, headers=org.admin)
    assert first.status_code == 200, first.text
    assert first.json()["IsAdminTeam"] is True
    second = await world.client.post(url, headers=org.admin)
    assert second.json()["IsAdminTeam"] is False
    set_true = await world.client.post(url, json={"IsAdminTeam": True}, headers=org.admin)
    assert set_true.json()["IsAdminTeam"] is True
    set_again = await world.client.post(url, json={"isadminteam": True}, headers=org.admin)
    assert set_again.json()["IsAdminTeam"] is True
    bad = await world.client.post(url, json={"IsAdminTeam": "maybe"}, headers=org.admin)
    assert bad.status_code == 422
    listed = await org.teams()
    assert listed[0]["IsAdminTeam"] is True


async def test_survey_flag(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    url = f"/team/{team['Id']}/survey"
    done = await world.client.post(url, headers=org.admin)
    assert done.status_code == 200
    assert done.json()["IsSurveyCompleted"] is True
    undone = await world.client.post(url, json={"IsSurveyCompleted": False}, headers=org.admin)
    assert undone.json()["IsSurveyCompleted"] is False


async def test_member_list_pages_by_email(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    for letter in "cab":
        await org.add_member(team["Id"], email=f"{letter}@example.org")
    first = await world.client.get("/member?limit=2", headers=org.admin)
    assert [m["Email"] for m in first.json()] == ["a@example.org", "b@example.org"]
    link = first.headers["Link"]
    second = await world.client.get(link[1 : link.index(">")], headers=org.admin)
    assert [m["Email"] for m in second.json()] == ["c@example.org"]
    assert "Link" not in second.headers


async def test_unknown_team_id_is_404_for_every_team_route(world: World) -> None:
    org = world.org()
    missing = str(uuid.uuid4())
    for method, path in [
        ("GET", f"/team/{missing}"),
        ("GET", "/team/not-a-uuid"),
        ("PATCH", f"/team/{missing}"),
        ("DELETE", f"/team/{missing}"),
        ("GET", f"/team/{missing}/members"),
        ("POST", "/team/not-a-uuid/isadminteam"),
        ("POST", f"/team/{missing}/isadminteam"),
        ("POST", f"/team/{missing}/survey"),
        ("DELETE", f"/team/{missing}/members/{uuid.uuid4()}"),
        ("DELETE", f"/team/{missing}/members/nope"),
    ]:
        kwargs = {"json": {"Name": unique("x")}} if method == "PATCH" else {}
        response = await world.client.request(method, path, headers=org.admin, **kwargs)
        assert response.status_code == 404, (method, path, response.text)
        assert response.headers["content-type"] == "application/problem+json"
    members_path = f"/team/{missing}/members"
    response = await org.add_member(missing)
    assert response.status_code == 404, members_path

"""Another organization's admin sees 404 on every team endpoint, and changes nothing."""

from __future__ import annotations

import pytest

from tests.factories import World

pytestmark = pytest.mark.anyio


async def test_other_organization_gets_404_and_changes_nothing(world: World) -> None:
    owner = world.org()
    intruder = world.org()
    team = await owner.create_team("Owned", tags=["x"])
    member = (await owner.add_member(team["Id"], email="owned@example.org")).json()
    team_url = f"/team/{team['Id']}"
    before_teams = await owner.teams()
    before_members = (await world.client.get("/member", headers=owner.admin)).json()
    before_detail = (await world.client.get(team_url, headers=owner.admin)).json()

    attempts = [
        ("GET", team_url, None),
        ("PATCH", team_url, {"Name": "Stolen"}),
        ("DELETE", team_url, None),
        ("GET", f"{team_url}/members", None),
        ("POST", f"{team_url}/members", {"email": "spy@example.org", "givenName": "Spy"}),
        ("DELETE", f"{team_url}/members/{member['Id']}", None),
        ("POST", f"{team_url}/isadminteam", None),
        ("POST", f"{team_url}/survey", None),
        ("GET", f"/member/{member['Id']}", None),
    ]
    for method, path, body in attempts:
        response = await world.client.request(method, path, json=body, headers=intruder.admin)
        assert response.status_code == 404, (method, path, response.text)
        assert "Owned" not in response.text

    assert await intruder.teams() == []
    assert (await world.client.get("/member", headers=intruder.admin)).json() == []
    assert await owner.teams() == before_teams
    assert (await world.client.get("/member", headers=owner.admin)).json() == before_members
    assert (await world.client.get(team_url, headers=owner.admin)).json() == before_detail


async def test_team_creation_cannot_enlist_another_organizations_member(world: World) -> None:
    owner = world.org()
    intruder = world.org()
    member = await owner.create_member()
    response = await world.client.post(
        "/team", json={"name": "Heist", "members": [member["Id"]]}, headers=intruder.admin
    )
    assert response.status_code == 422
    assert await intruder.teams() == []

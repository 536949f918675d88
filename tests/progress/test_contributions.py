"""Who completed a task (``MemberId``), who recorded it (``RecordedBy``), the overview's
``Contributions`` and who sees them, and the per-member ranking."""

from __future__ import annotations

import uuid
from fractions import Fraction
from typing import Any

import pytest

from questline.web.identity import Role
from tests.factories import Org, World, bearer
from tests.seasons.support import create_task

pytestmark = pytest.mark.anyio


async def member_of(org: Org, team_id: str, name: str = "Ada") -> dict[str, Any]:
    response = await org.add_member(team_id, given_name=name)
    assert response.status_code == 201, response.text
    return dict(response.json())


@pytest.mark.parametrize("route", [False, True], ids=["fast-lane", "route"])
async def test_member_id_must_be_a_member_of_the_team(world: World, route: bool) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20, 30])
    team = await org.create_team()
    other = await org.create_team()
    ada = await member_of(org, team["Id"])
    bob = await member_of(org, other["Id"], "Bob")
    extra = {"Idempotency-Key": uuid.uuid4().hex} if route else {}
    url = f"/team/{team['Id']}/progress"
    for member_id in (bob["Id"], str(uuid.uuid4())):
        refused = await world.client.post(
            url, json={"TaskId": tasks[0], "MemberId": member_id}, headers={**org.admin, **extra}
        )
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["field"] == "MemberId"
    malformed = await world.client.post(
        url, json={"TaskId": tasks[0], "MemberId": "nope"}, headers=org.admin
    )
    assert malformed.status_code == 422
    done = await world.client.post(
        url, json={"TaskId": tasks[0], "MemberId": ada["Id"]}, headers={**org.admin, **extra}
    )
    assert done.status_code == 201, done.text
    assert done.json()["MemberId"] == ada["Id"]
    assert done.json()["RecordedBy"] == "admin"
    unnamed = await world.client.post(url, json={"TaskId": tasks[1]}, headers=org.admin)
    assert unnamed.json()["MemberId"] is None
    assert unnamed.json()["RecordedBy"] == "admin"
    listed = await world.client.get(url, headers=org.member)
    by_task = {c["TaskId"]: c for c in listed.json()}
    assert by_task[tasks[0]]["MemberId"] == ada["Id"]
    assert by_task[tasks[0]]["RecordedBy"] == "admin"
    repeat = await world.client.post(url, json={"TaskId": tasks[0]}, headers=org.admin)
    assert repeat.status_code == 200
    assert repeat.json()["MemberId"] == ada["Id"]


async def test_contributions_are_shown_to_admins_and_the_teams_own_members(
    world: World,
) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20, 30, 5])
    team = await org.create_team()
    other = await org.create_team()
    ada = await member_of(org, team["Id"], "Ada")
    bea = await member_of(org, team["Id"], "Bea")
    outsider = await member_of(org, other["Id"], "Cy")
    url = f"/team/{team['Id']}/progress"
    for task, member in ((tasks[0], ada), (tasks[1], ada), (tasks[2], None)):
        body: dict[str, Any] = {"TaskId": task}
        if member is not None:
            body["MemberId"] = member["Id"]
        assert (await world.client.post(url, json=body, headers=org.admin)).status_code == 201
    expected = [
        {"MemberId": ada["Id"], "GivenName": "Ada", "Email": ada["Email"], "Points": 30,
         "TasksCompleted": 2},
        {"MemberId": bea["Id"], "GivenName": "Bea", "Email": bea["Email"], "Points": 0,
         "TasksCompleted": 0},
        {"MemberId": None, "GivenName": None, "Email": None, "Points": 30,
         "TasksCompleted": 1},
    ]  # fmt: skip
    overview = f"/team/{team['Id']}/overview"

    def token(subject: str) -> dict[str, str]:
        return bearer(world.tokens.mint(role=Role.MEMBER, org_id=org.id, subject=subject))

    own_by_email = token(ada["Email"].upper())
    own_by_id = token(bea["Id"])
    stranger = token(outsider["Email"])
    for _ in range(2):  # the second answer comes from the read model
        assert (await world.client.get(overview, headers=org.admin)).json()[
            "Contributions"
        ] == expected
        assert (await world.client.get(overview, headers=own_by_email)).json()[
            "Contributions"
        ] == expected
        assert (await world.client.get(overview, headers=own_by_id)).json()[
            "Contributions"
        ] == expected
        hidden = await world.client.get(overview, headers=stranger)
        assert hidden.status_code == 200
        assert hidden.json()["Contributions"] is None
        plain = await world.client.get(overview, headers=org.member)
        assert plain.json()["Contributions"] is None
    # Another team's members see their own team's contributions, not this one's.
    theirs = await world.client.get(f"/team/{other['Id']}/overview", headers=stranger)
    assert [c["GivenName"] for c in theirs.json()["Contributions"]] == ["Cy", None]


async def test_per_member_ranking_shows_both_figures(world: World) -> None:
    org = world.org()
    _, tasks = await create_task(org, [30, 20])
    big = await org.create_team("Big")
    small = await org.create_team("Small")
    await org.create_team("Empty")
    for name in ("A", "B", "C"):
        await member_of(org, big["Id"], name)
    await member_of(org, small["Id"], "D")
    for team in (big, small):
        done = await world.client.post(
            f"/team/{team['Id']}/progress", json={"TaskId": tasks[0]}, headers=org.admin
        )
        assert done.status_code == 201
    await world.client.post(
        f"/team/{big['Id']}/progress", json={"TaskId": tasks[1]}, headers=org.admin
    )
    response = await world.client.get(
        "/leaderboard", params={"by": "perMember"}, headers=org.member
    )
    assert response.status_code == 200, response.text
    got = [(e["Name"], e["Score"], e["MemberCount"], e["PointsPerMember"]) for e in response.json()]
    assert got == [("Small", 30, 1, 30.0), ("Big", 50, 3, 16.6667), ("Empty", 0, 0, 0.0)]
    assert Fraction(50, 3) < 30
    plain = await world.client.get("/leaderboard", headers=org.member)
    assert "MemberCount" not in plain.json()[0]
    csv = await world.client.get(
        "/leaderboard",
        params={"by": "perMember"},
        headers={**org.member, "Accept": "text/csv"},
    )
    assert csv.status_code == 200
    assert csv.text.splitlines()[0].endswith("MemberCount,PointsPerMember")
    bad = await world.client.get("/leaderboard", params={"by": "perTeam"}, headers=org.member)
    assert bad.status_code == 422

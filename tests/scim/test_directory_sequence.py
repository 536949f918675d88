"""A directory's typical first sync and churn, as Okta or Entra ID send it: 1,000 users,
100 groups of 10, 100 members moved between groups, 50 users deactivated. The end state
is checked through SCIM and through the team API. (The same sequence, timed, is
bench/probes/scim_sync.py.)"""

from __future__ import annotations

import pytest

from tests.factories import Org
from tests.scim.support import Directory, directory_sequence

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

USERS, GROUPS, MOVES, DEACTIVATED = 1000, 100, 100, 50


async def test_a_directory_sequence(directory: Directory, org: Org) -> None:
    done = await directory_sequence(
        directory, users=USERS, groups=GROUPS, moves=MOVES, deactivate=DEACTIVATED
    )
    users, groups = done.users, done.groups
    size = USERS // GROUPS

    async def total(path: str, filter: str) -> int:
        response = await directory.client.get(
            f"/scim/v2{path}", params={"filter": filter, "count": 0}, headers=directory.headers
        )
        assert response.status_code == 200, response.text
        return int(response.json()["totalResults"])

    assert await total("/Users", 'userName sw "p"') == USERS
    assert await total("/Users", "active eq false") == DEACTIVATED
    assert await total("/Groups", 'displayName sw "group"') == GROUPS
    # Group 1 got group 0's first member, which group 0 no longer has.
    first = await directory.request("GET", f"/Groups/{groups[0]}")
    second = await directory.request("GET", f"/Groups/{groups[1]}")
    assert users[0] not in {m["value"] for m in first.json()["members"]}
    assert users[0] in {m["value"] for m in second.json()["members"]}
    assert len(second.json()["members"]) == size  # one left, one came
    # The deactivated users (the last 50) are in no team; everyone else is in one.
    for user in users[-DEACTIVATED:][::10]:
        assert await total("/Groups", f'members[value eq "{user}"]') == 0
    teams = (await org.client.get("/team", headers=org.admin)).json()
    assert sum(t["MemberCount"] for t in teams) == USERS - DEACTIVATED

    # Every group's members against a reference: the same sequence played on sets.
    expected = {g: set(users[i * size : (i + 1) * size]) for i, g in enumerate(groups)}
    for move in range(MOVES):
        member = users[(move % GROUPS) * size]
        expected[groups[move % GROUPS]].discard(member)
        expected[groups[(move + 1) % GROUPS]].add(member)
    for members in expected.values():
        members.difference_update(users[-DEACTIVATED:])
    listed = await directory.client.get(
        "/scim/v2/Groups", params={"count": GROUPS}, headers=directory.headers
    )
    assert listed.status_code == 200, listed.text
    found = {
        g["id"]: {m["value"] for m in g.get("members", [])} for g in listed.json()["Resources"]
    }
    assert found == expected
    # The team API says the same: each team's member count, and who is in which team.
    assert {t["Id"]: t["MemberCount"] for t in teams} == {g: len(m) for g, m in expected.items()}
    sample = groups[0]  # it lost its first member and gained the last group's first
    team = await org.client.get(f"/team/{sample}", headers=org.admin)
    assert team.status_code == 200, team.text
    assert {m["Id"] for m in team.json()["Members"]} == expected[sample]

"""A directory's typical first sync and churn, as Okta or Entra ID send it: 1,000 users,
100 groups of 10, 100 members moved between groups, 50 users deactivated. The end state
is checked through SCIM and through the team API. (The same sequence, timed, is
bench/probes/scim_sync.py.)"""

from __future__ import annotations

import pytest

from tests.factories import Org
from tests.scim.support import Directory, directory_sequence

pytestmark = pytest.mark.anyio

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

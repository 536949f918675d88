"""A directory's typical first sync and churn, as Okta or Entra ID send it: 1,000 users,
100 groups of 10, 100 members moved between groups, 50 users deactivated. The end state
is checked through SCIM and through the team API."""

from __future__ import annotations

import pytest

from tests.factories import Org
from tests.scim.conftest import Directory

pytestmark = pytest.mark.anyio

USERS, GROUPS, MOVES, DEACTIVATED = 1000, 100, 100, 50
PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


async def test_a_directory_sequence(directory: Directory, org: Org) -> None:
    users = [
        (await directory.create_user(f"p{i:04}@example.org", f"P{i}", externalId=f"u{i}"))["id"]
        for i in range(USERS)
    ]
    size = USERS // GROUPS
    groups = [
        (await directory.create_group(f"Group {g:03}", users[g * size : (g + 1) * size]))["id"]
        for g in range(GROUPS)
    ]
    # Move the first member of each group to the next group (as a directory does it:
    # a remove on one group, an add on the other).
    for g in range(MOVES):
        member = users[(g % GROUPS) * size]
        source, target = groups[g % GROUPS], groups[(g + 1) % GROUPS]
        removed = await directory.request(
            "PATCH",
            f"/Groups/{source}",
            {"schemas": [PATCH_OP], "Operations": [
                {"op": "remove", "path": f'members[value eq "{member}"]'}
            ]},
        )  # fmt: skip
        assert removed.status_code == 200, removed.text
        added = await directory.request(
            "PATCH",
            f"/Groups/{target}",
            {"schemas": [PATCH_OP], "Operations": [
                {"op": "add", "path": "members", "value": [{"value": member}]}
            ]},
        )  # fmt: skip
        assert added.status_code == 200, added.text
    off = {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "replace", "path": "active", "value": False}],
    }
    for user in users[-DEACTIVATED:]:
        response = await directory.request("PATCH", f"/Users/{user}", off)
        assert response.status_code == 200, response.text

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
    # The deactivated users (the last 50) are in no team; everyone else is in one.
    for user in users[-DEACTIVATED:][::10]:
        assert await total("/Groups", f'members[value eq "{user}"]') == 0
    teams = (await org.client.get("/team", headers=org.admin)).json()
    assert sum(t["MemberCount"] for t in teams) == USERS - DEACTIVATED

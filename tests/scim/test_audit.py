"""Every change a directory makes through ``/scim/v2`` is in the audit log, written with
the change and naming the directory (``ActorVia`` ``scim``, ``ActorRole`` ``scim``); a
refused SCIM request leaves no entry (both backends)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.factories import Org
from tests.scim.support import PATCH_OP, Directory

pytestmark = pytest.mark.anyio


async def log(org: Org, **params: Any) -> list[dict[str, Any]]:
    response = await org.client.get("/audit", params={"limit": 1000, **params}, headers=org.admin)
    assert response.status_code == 200, response.text
    return list(response.json())


async def entries_of(org: Org, response: httpx.Response) -> list[dict[str, Any]]:
    """The entries the request of ``response`` wrote, oldest first."""
    request_id = response.headers["X-Request-Id"]
    return [e for e in reversed(await log(org)) if e["RequestId"] == request_id]


def actions(found: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["Action"], e["TargetType"]) for e in found]


def patch(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"schemas": [PATCH_OP], "Operations": list(operations)}


async def created(directory: Directory, path: str, body: dict[str, Any]) -> httpx.Response:
    response = await directory.request("POST", path, body)
    assert response.status_code == 201, response.text
    return response


USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"


def user_body(email: str, given: str = "Ada", **extra: Any) -> dict[str, Any]:
    return {"schemas": [USER], "userName": email, "name": {"givenName": given}, **extra}


async def test_each_scim_change_leaves_its_entry(directory: Directory, org: Org) -> None:
    made = await created(directory, "/Users", user_body("ada@example.org", externalId="e-1"))
    ada = made.json()["id"]
    [entry] = await entries_of(org, made)
    assert (entry["Action"], entry["TargetType"], entry["TargetId"]) == (
        "member.created",
        "member",
        ada,
    )
    assert (entry["ActorRole"], entry["ActorVia"]) == ("scim", "scim")
    assert entry["Actor"].startswith("scim-token:")  # which of the organization's tokens
    assert entry["Changes"]["Email"] == {"Before": None, "After": "ada@example.org"}
    assert entry["Changes"]["ExternalId"] == {"Before": None, "After": "e-1"}
    grace = (await directory.create_user("grace@example.org", "Grace"))["id"]

    # Replaced: the fields that changed, before and after.
    replaced = await directory.request(
        "PUT", f"/Users/{ada}", user_body("ada@example.org", "Augusta", externalId="e-1")
    )
    assert replaced.status_code == 200, replaced.text
    [entry] = await entries_of(org, replaced)
    assert entry["Action"] == "member.updated"
    assert entry["Changes"] == {"GivenName": {"Before": "Ada", "After": "Augusta"}}

    # A group with both; a member moved out and back; renamed; its directory id changed.
    group = await created(
        directory,
        "/Groups",
        {"schemas": [GROUP], "displayName": "Rockets", "members": [{"value": ada}]},
    )
    team = group.json()["id"]
    made_entries = await entries_of(org, group)
    assert actions(made_entries) == [("team.created", "team"), ("member.added", "team")]
    assert made_entries[1]["Changes"] == {"MemberId": {"Before": None, "After": ada}}
    assert {e["ActorVia"] for e in made_entries} == {"scim"}

    moved = await directory.request(
        "PATCH",
        f"/Groups/{team}",
        patch(
            {"op": "remove", "path": f'members[value eq "{ada}"]'},
            {"op": "add", "path": "members", "value": [{"value": grace}]},
        ),
    )
    assert moved.status_code == 200, moved.text
    moves = await entries_of(org, moved)
    assert actions(moves) == [("member.removed", "team"), ("member.added", "team")]
    assert moves[0]["Changes"] == {"MemberId": {"Before": ada, "After": None}}
    assert moves[1]["Changes"] == {"MemberId": {"Before": None, "After": grace}}

    renamed = await directory.request(
        "PATCH", f"/Groups/{team}", patch({"op": "replace", "path": "displayName", "value": "Jets"})
    )
    assert renamed.status_code == 200, renamed.text
    [entry] = await entries_of(org, renamed)
    assert entry["Action"] == "team.renamed"
    assert entry["Changes"] == {"Name": {"Before": "Rockets", "After": "Jets"}}
    retagged = await directory.request(
        "PATCH", f"/Groups/{team}", patch({"op": "replace", "path": "externalId", "value": "g-9"})
    )
    assert retagged.status_code == 200, retagged.text
    [entry] = await entries_of(org, retagged)
    assert entry["Action"] == "team.updated"
    assert entry["Changes"] == {"ExternalId": {"Before": None, "After": "g-9"}}
    same = {"schemas": [GROUP], "displayName": "Jets", "externalId": "g-9"}
    same["members"] = [{"value": grace}]
    unchanged = await directory.request("PUT", f"/Groups/{team}", same)
    assert unchanged.status_code == 200, unchanged.text
    [entry] = await entries_of(org, unchanged)  # made, though it changed nothing
    assert (entry["Action"], entry["Changes"]) == ("team.updated", {})

    # Deactivated (out of its team, each removal logged), reactivated, deleted.
    off = await directory.request(
        "PATCH", f"/Users/{grace}", patch({"op": "replace", "path": "active", "value": False})
    )
    assert off.status_code == 200, off.text
    assert actions(await entries_of(org, off)) == [
        ("member.removed", "team"),
        ("member.deactivated", "member"),
    ]
    on = await directory.request(
        "PATCH", f"/Users/{grace}", patch({"op": "replace", "path": "active", "value": True})
    )
    [entry] = await entries_of(org, on)
    assert (entry["Action"], entry["Changes"]) == (
        "member.reactivated",
        {"Active": {"Before": False, "After": True}},
    )
    gone = await directory.request("DELETE", f"/Users/{grace}")
    assert gone.status_code == 204, gone.text
    [entry] = await entries_of(org, gone)
    assert (entry["Action"], entry["TargetId"]) == ("member.deleted", grace)
    assert entry["Changes"]["Email"] == {"Before": "grace@example.org", "After": None}

    dropped = await directory.request("DELETE", f"/Groups/{team}")
    assert dropped.status_code == 204, dropped.text
    [entry] = await entries_of(org, dropped)
    assert (entry["Action"], entry["TargetId"]) == ("team.deleted", team)
    # Every entry of this test names the directory, and only the directory.
    actors = {(e["Actor"], e["ActorVia"]) for e in await log(org)}
    assert len(actors) == 1, actors
    [(actor, via)] = actors
    assert actor.startswith("scim-token:")
    assert via == "scim"


async def test_a_refused_scim_change_leaves_no_entry(directory: Directory, org: Org) -> None:
    ada = (await directory.create_user("ada@example.org"))["id"]
    team = (await directory.create_group("Rockets", [ada]))["id"]
    before = await log(org)
    refusals = [
        # Taken userName (409), stale If-Match (412), an unknown member (400), a patch
        # that cannot apply (400), a deactivation behind a stale version (412).
        (await directory.request("POST", "/Users", user_body("ADA@example.org")), 409),
        (
            await directory.request(
                "PUT", f"/Users/{ada}", user_body("ada@example.org", "X"), **{"If-Match": 'W/"x"'}
            ),
            412,
        ),
        (
            await directory.request(
                "PATCH",
                f"/Groups/{team}",
                patch({"op": "add", "path": "members", "value": [{"value": "nobody"}]}),
            ),
            400,
        ),
        (
            await directory.request(
                "PATCH", f"/Users/{ada}", patch({"op": "replace", "path": "emails", "value": 7})
            ),
            400,
        ),
        (
            await directory.request(
                "PATCH",
                f"/Users/{ada}",
                patch({"op": "replace", "path": "active", "value": False}),
                **{"If-Match": 'W/"stale"'},
            ),
            412,
        ),
        (await directory.request("DELETE", f"/Groups/{team}", **{"If-Match": 'W/"old"'}), 412),
    ]
    for response, status in refusals:
        assert response.status_code == status, response.text
    assert await log(org) == before

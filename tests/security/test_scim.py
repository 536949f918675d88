"""Cross-organization SCIM: two organizations' directories provision the same
``userName``, ``externalId`` and e-mail, and groups of the same ``displayName`` and
``externalId``, in both orders; one organization's SCIM token never reads, finds,
changes or deletes the other's users and groups, and revoking one organization's token
leaves the other's working.

The directories come from ``tests/scim/conftest.py`` (plain functions; no conftest
here)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.factories import Org, World
from tests.scim.conftest import directory_for
from tests.scim.support import SCIM, Directory

pytestmark = pytest.mark.anyio

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"

USER_NAME = "ada.lovelace"
EMAIL = "ada@example.org"
USER_EXTERNAL_ID = "00u1ab2cd3EF4gh5i6j7"
GROUP_NAME = "Rockets"
GROUP_EXTERNAL_ID = "00g1ab2cd3EF4gh5i6j7"


def user_body(given: str = "Ada") -> dict[str, Any]:
    return {
        "schemas": [USER],
        "userName": USER_NAME,
        "externalId": USER_EXTERNAL_ID,
        "name": {"givenName": given},
        "emails": [{"value": EMAIL, "type": "work", "primary": True}],
    }


def group_body(members: list[str], name: str = GROUP_NAME) -> dict[str, Any]:
    return {
        "schemas": [GROUP],
        "displayName": name,
        "externalId": GROUP_EXTERNAL_ID,
        "members": [{"value": m} for m in members],
    }


def patch(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"schemas": [PATCH], "Operations": list(operations)}


def assert_not_found(response: httpx.Response) -> None:
    assert response.status_code == 404, response.text
    assert response.headers["content-type"].startswith(SCIM)
    assert response.json()["status"] == "404"


async def provision(directory: Directory) -> tuple[dict[str, Any], dict[str, Any]]:
    user = await directory.request("POST", "/Users", user_body())
    assert user.status_code == 201, user.text
    group = await directory.request("POST", "/Groups", group_body([user.json()["id"]]))
    assert group.status_code == 201, group.text
    return user.json(), group.json()


async def found(directory: Directory, resource: str, filter: str) -> list[str]:
    response = await directory.client.get(
        f"/scim/v2/{resource}", params={"filter": filter}, headers=directory.headers
    )
    assert response.status_code == 200, response.text
    return [r["id"] for r in response.json()["Resources"]]


@pytest.fixture(params=["a_first", "b_first"])
async def two(
    request: pytest.FixtureRequest, world: World
) -> tuple[Directory, Directory, dict[str, Any]]:
    """Organizations A and B, each with the same user and group, provisioned in the
    order of the parameter; returns A's and B's directories and what each holds."""
    a = await directory_for(world.org(), world)
    b = await directory_for(world.org(), world)
    made: dict[str, Any] = {}
    order = (("a", a), ("b", b)) if request.param == "a_first" else (("b", b), ("a", a))
    for name, directory in order:
        made[name] = await provision(directory)
    return a, b, made


async def test_the_same_identifiers_live_apart(
    two: tuple[Directory, Directory, dict[str, Any]],
) -> None:
    a, b, made = two
    (a_user, a_group), (b_user, b_group) = made["a"], made["b"]
    assert a_user["id"] != b_user["id"]
    assert a_group["id"] != b_group["id"]
    for directory, user, group in ((a, a_user, a_group), (b, b_user, b_group)):
        assert await found(directory, "Users", f'userName eq "{USER_NAME}"') == [user["id"]]
        assert await found(directory, "Users", f'externalId eq "{USER_EXTERNAL_ID}"') == [
            user["id"]
        ]
        assert await found(directory, "Users", f'emails.value eq "{EMAIL}"') == [user["id"]]
        assert await found(directory, "Users", "active pr or userName pr") == [user["id"]]
        assert await found(directory, "Groups", f'displayName eq "{GROUP_NAME}"') == [group["id"]]
        assert await found(directory, "Groups", f'externalId eq "{GROUP_EXTERNAL_ID}"') == [
            group["id"]
        ]
        assert [m["value"] for m in group["members"]] == [user["id"]]


async def test_one_token_never_reaches_the_other_organization(
    two: tuple[Directory, Directory, dict[str, Any]],
) -> None:
    a, b, made = two
    (_, a_group), (b_user, b_group) = made["a"], made["b"]
    before = {
        path: (await b.request("GET", path)).json()
        for path in (f"/Users/{b_user['id']}", f"/Groups/{b_group['id']}")
    }
    user_path, group_path = f"/Users/{b_user['id']}", f"/Groups/{b_group['id']}"
    off = patch({"op": "replace", "path": "active", "value": False})
    renamed = patch({"op": "replace", "path": "displayName", "value": "Taken"})
    for method, path, body in (
        ("GET", user_path, None),
        ("PUT", user_path, user_body("Mallory")),
        ("PATCH", user_path, off),
        ("DELETE", user_path, None),
        ("GET", group_path, None),
        ("PUT", group_path, group_body([], "Taken")),
        ("PATCH", group_path, renamed),
        ("DELETE", group_path, None),
    ):
        assert_not_found(await a.request(method, path, body))
        assert_not_found(await a.request(method, path, body, **{"If-Match": "*"}))
    # Filters and member lists name only A's own.
    assert await found(a, "Users", f'id eq "{b_user["id"]}"') == []
    assert await found(a, "Groups", f'id eq "{b_group["id"]}"') == []
    assert await found(a, "Groups", f'members.value eq "{b_user["id"]}"') == []
    # B's user cannot be made a member of A's group.
    joined = await a.request(
        "PATCH",
        f"/Groups/{a_group['id']}",
        patch({"op": "add", "path": "members", "value": [{"value": b_user["id"]}]}),
    )
    assert joined.status_code == 400, joined.text
    assert joined.json()["scimType"] == "invalidValue"
    # B's resources are exactly as they were.
    for path, document in before.items():
        now = await b.request("GET", path)
        assert now.status_code == 200, now.text
        assert now.json() == document


async def test_revoking_one_organizations_token_leaves_the_others(
    world: World,
) -> None:
    a_org, b_org = world.org(), world.org()
    tokens: dict[str, dict[str, Any]] = {}
    for name, org in (("a", a_org), ("b", b_org)):
        made = await org.client.post(
            "/organization/scim-tokens", json={"Label": "Okta"}, headers=org.admin
        )
        assert made.status_code == 201, made.text
        tokens[name] = made.json()
    a = Directory(client=a_org.client, org_id=a_org.id, token=tokens["a"]["Token"])
    b = Directory(client=b_org.client, org_id=b_org.id, token=tokens["b"]["Token"])
    await provision(a)
    await provision(b)

    # A's admin cannot revoke B's token, nor see it; B's admin likewise.
    for org, other in ((a_org, "b"), (b_org, "a")):
        refused = await org.client.delete(
            f"/organization/scim-tokens/{tokens[other]['Id']}", headers=org.admin
        )
        assert refused.status_code == 404, refused.text
        listed = (await org.client.get("/organization/scim-tokens", headers=org.admin)).json()
        assert tokens[other]["Id"] not in [t["Id"] for t in listed]
    assert (await b.request("GET", "/Users")).status_code == 200

    revoked = await a_org.client.delete(
        f"/organization/scim-tokens/{tokens['a']['Id']}", headers=a_org.admin
    )
    assert revoked.status_code == 204, revoked.text
    refused = await a.request("GET", "/Users")
    assert refused.status_code == 401, refused.text
    assert refused.headers["content-type"].startswith(SCIM)
    still = await b.request("GET", "/Users")
    assert still.status_code == 200, still.text
    assert still.json()["totalResults"] == 1
    grace = {**user_body("Grace"), "userName": "grace", "externalId": "00u-grace"}
    grace["emails"] = [{"value": "grace@example.org", "primary": True}]
    created = await b.request("POST", "/Users", grace)
    assert created.status_code == 201, created.text


async def test_a_token_of_one_organization_is_not_another_organizations_admin(
    world: World,
) -> None:
    a_org: Org = world.org()
    b_org: Org = world.org()
    a = await directory_for(a_org, world)
    scim = {"Authorization": f"Bearer {a.token}"}
    for path in ("/organization/scim-tokens", "/member", "/audit"):
        response = await b_org.client.get(path, headers=scim)
        assert response.status_code == 403, (path, response.text)

"""SCIM ``emails`` (RFC 7643 §4.1.2): every entry a directory sends is kept with its
``type`` and ``primary``, and answered as sent; the member's e-mail (its sign-in
address) is the primary entry's, else the first's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import Org
from tests.scim.support import Directory

pytestmark = pytest.mark.anyio

USER = "urn:ietf:params:scim:schemas:core:2.0:User"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


def user(emails: list[dict[str, Any]], user_name: str = "ada") -> dict[str, Any]:
    return {
        "schemas": [USER],
        "userName": user_name,
        "name": {"givenName": "Ada"},
        "emails": emails,
    }


def patch(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"schemas": [PATCH], "Operations": list(operations)}


async def member_email(org: Org, member_id: str) -> str:
    members = (await org.client.get("/member", headers=org.admin)).json()
    return str(next(m["Email"] for m in members if m["Id"] == member_id))


THREE = [
    {"value": "ada@home.example", "type": "home"},
    {"value": "ada@work.example", "type": "work", "primary": True},
    {"value": "ada@other.example", "type": "other", "primary": False},
]


async def test_created_emails_keep_their_types_and_primary(directory: Directory, org: Org) -> None:
    created = await directory.request("POST", "/Users", user(THREE))
    assert created.status_code == 201, created.text
    assert created.json()["emails"] == THREE
    read = await directory.request("GET", f"/Users/{created.json()['id']}")
    assert read.json()["emails"] == THREE
    assert await member_email(org, created.json()["id"]) == "ada@work.example"
    listed = await directory.request("GET", '/Users?filter=userName eq "ada"')
    assert listed.json()["Resources"][0]["emails"] == THREE


async def test_without_a_primary_the_first_is_the_members_email(
    directory: Directory, org: Org
) -> None:
    emails = [{"value": "first@example.org", "type": "work"}, {"value": "second@example.org"}]
    created = await directory.request("POST", "/Users", user(emails))
    assert created.status_code == 201, created.text
    assert created.json()["emails"] == emails
    assert await member_email(org, created.json()["id"]) == "first@example.org"


async def test_a_replacement_sets_the_entries_and_the_primary(
    directory: Directory, org: Org
) -> None:
    made = (await directory.request("POST", "/Users", user(THREE))).json()
    emails = [
        {"value": "ada@work.example", "type": "work"},
        {"value": "ada@home.example", "type": "home", "primary": True},
    ]
    replaced = await directory.request("PUT", f"/Users/{made['id']}", user(emails))
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["emails"] == emails
    assert (await directory.request("GET", f"/Users/{made['id']}")).json()["emails"] == emails
    assert await member_email(org, made["id"]) == "ada@home.example"


async def test_a_patch_marking_another_primary_moves_the_members_email(
    directory: Directory, org: Org
) -> None:
    made = (await directory.request("POST", "/Users", user(THREE))).json()
    marked = await directory.request(
        "PATCH",
        f"/Users/{made['id']}",
        patch({"op": "replace", "path": 'emails[type eq "home"].primary', "value": True}),
    )
    assert marked.status_code == 200, marked.text
    assert [(e["value"], e.get("primary")) for e in marked.json()["emails"]] == [
        ("ada@home.example", True),
        ("ada@work.example", False),
        ("ada@other.example", False),
    ]
    assert await member_email(org, made["id"]) == "ada@home.example"

    added = await directory.request(
        "PATCH",
        f"/Users/{made['id']}",
        patch(
            {
                "op": "add",
                "path": "emails",
                "value": [{"value": "ada@new.example", "type": "work", "primary": True}],
            }
        ),
    )
    assert added.status_code == 200, added.text
    emails = added.json()["emails"]
    assert [e["value"] for e in emails if e.get("primary")] == ["ada@new.example"]
    assert {"value": "ada@new.example", "type": "work", "primary": True} in emails
    assert await member_email(org, made["id"]) == "ada@new.example"


async def test_a_patch_of_other_attributes_leaves_the_entries_as_they_were(
    directory: Directory,
) -> None:
    emails = [{"value": "ada@example.org", "primary": True}, {"value": "ada@example.net"}]
    made = (await directory.request("POST", "/Users", user(emails))).json()
    off = await directory.request(
        "PATCH", f"/Users/{made['id']}", patch({"op": "replace", "path": "active", "value": False})
    )
    assert off.status_code == 200, off.text
    assert off.json()["emails"] == emails  # no type added to an untyped entry


async def test_too_many_entries_are_refused(directory: Directory) -> None:
    emails = [{"value": f"a{i}@example.org"} for i in range(21)]
    refused = await directory.request("POST", "/Users", user(emails))
    assert refused.status_code == 400, refused.text
    assert refused.json()["scimType"] == "invalidValue"

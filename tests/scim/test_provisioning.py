"""SCIM provisioning through the real ASGI stack: access, tenancy, users, groups,
filters, PATCH, ETags, errors, deactivation (both backends)."""

from __future__ import annotations

import uuid

import pytest

from questline.auth import sessions
from questline.config import Settings
from questline.storage import tenancy
from questline.web.identity import Role
from tests.factories import Org, World
from tests.progress.factories import completed, make_discipline, score_of
from tests.scim.conftest import directory_for
from tests.scim.support import SCIM, Directory

pytestmark = pytest.mark.anyio

ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


def assert_scim_error(response: object, status: int, scim_type: str | None = None) -> None:
    import httpx

    assert isinstance(response, httpx.Response)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(SCIM), response.headers
    body = response.json()
    assert body["schemas"] == [ERROR]
    assert body["status"] == str(status)
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body


async def test_a_scim_token_can_do_nothing_but_scim(directory: Directory, org: Org) -> None:
    scim = {"Authorization": f"Bearer {directory.token}"}
    for path in ("/team", "/member", "/discipline", "/leaderboard", "/webhooks"):
        response = await org.client.get(path, headers=scim)
        assert response.status_code in (403, 404), (path, response.text)
        if response.status_code == 403:
            assert "scim" in response.json()["detail"]
    created = await org.client.post("/team", json={"name": "Nope"}, headers=scim)
    assert created.status_code == 403
    # Not a JWT: no dashboard session comes of it.
    assert (
        await org.client.post("/auth/session", json={"IdToken": directory.token})
    ).status_code == 401


async def test_other_roles_and_no_token_cannot_use_scim(directory: Directory, org: Org) -> None:
    for headers in (org.admin, org.member):
        assert_scim_error(await org.client.get("/scim/v2/Users", headers=headers), 403)
    assert_scim_error(await org.client.get("/scim/v2/Users"), 401)
    bad = {"Authorization": "Bearer not.a.token"}
    assert_scim_error(await org.client.get("/scim/v2/Groups", headers=bad), 401)


async def test_an_admin_mints_the_token_the_dashboard_shows(org: Org) -> None:
    refused = await org.client.post("/organization/scim-token", json={}, headers=org.member)
    assert refused.status_code == 403
    minted = await org.client.post("/organization/scim-token", json={"Days": 30}, headers=org.admin)
    assert minted.status_code == 201, minted.text
    body = minted.json()
    assert body["BaseUrl"].endswith("/scim/v2")
    listed = await org.client.get(
        "/scim/v2/Users", headers={"Authorization": f"Bearer {body['Token']}"}
    )
    assert listed.status_code == 200, listed.text
    assert listed.headers["content-type"].startswith(SCIM)
    assert listed.json()["totalResults"] == 0


async def test_another_organizations_ids_are_not_found(directory: Directory, world: World) -> None:
    user = await directory.create_user("ada@example.org")
    group = await directory.create_group("Rockets", [user["id"]])
    other = await directory_for(world.org(), world)
    for path in (f"/Users/{user['id']}", f"/Groups/{group['id']}"):
        assert_scim_error(await other.request("GET", path), 404)
        assert_scim_error(await other.request("PUT", path, {"userName": "x@example.org"}), 404)
        assert_scim_error(await other.request("DELETE", path), 404)
    assert (await other.request("GET", "/Users")).json()["totalResults"] == 0
    assert_scim_error(await other.request("GET", "/Users/not-a-uuid"), 404)
    still = await directory.request("GET", f"/Users/{user['id']}")
    assert still.status_code == 200


async def test_users_are_members(directory: Directory, org: Org) -> None:
    user = await directory.create_user("Ada@Example.org", "Ada", externalId="00u1", active=True)
    assert user["userName"] == "Ada@Example.org"
    # The domain is normalized; the entry stays primary, as sent.
    assert user["emails"] == [{"value": "Ada@example.org", "primary": True}]
    assert user["name"] == {"givenName": "Ada"}
    assert user["externalId"] == "00u1"
    assert user["meta"]["resourceType"] == "User"
    members = (await org.client.get("/member", headers=org.admin)).json()
    assert [(m["Id"], m["Email"], m["GivenName"]) for m in members] == [
        (user["id"], "Ada@example.org", "Ada")
    ]
    duplicate = await directory.request(
        "POST", "/Users", {"userName": "ada@example.org", "emails": [{"value": "ada@example.org"}]}
    )
    assert_scim_error(duplicate, 409, "uniqueness")
    not_email = await directory.request("POST", "/Users", {"userName": "no e-mail"})
    assert_scim_error(not_email, 400, "invalidValue")


async def test_filters_and_paging(directory: Directory) -> None:
    for i in range(5):
        await directory.create_user(f"user{i}@example.org", f"User{i}", externalId=f"ext-{i}")
    await directory.create_user("someone@other.org", "Someone", externalId="EXT-9")

    async def found(filter: str) -> list[str]:
        response = await directory.client.get(
            "/scim/v2/Users", params={"filter": filter}, headers=directory.headers
        )
        assert response.status_code == 200, response.text
        return sorted(r["userName"] for r in response.json()["Resources"])

    assert await found('userName eq "USER1@example.org"') == ["user1@example.org"]
    assert await found('emails.value co "other"') == ["someone@other.org"]
    assert await found('emails[value sw "user3"]') == ["user3@example.org"]
    assert await found('userName sw "user" and externalId eq "ext-2"') == ["user2@example.org"]
    assert await found('externalId eq "ext-0" or externalId eq "EXT-9"') == [
        "someone@other.org",
        "user0@example.org",
    ]
    assert await found('externalId eq "ext-9"') == []  # externalId is case-exact
    assert len(await found("active eq true")) == 6
    page = await directory.client.get(
        "/scim/v2/Users", params={"startIndex": 3, "count": 2}, headers=directory.headers
    )
    body = page.json()
    assert (body["totalResults"], body["startIndex"], body["itemsPerPage"]) == (6, 3, 2)
    for bad in ('userName eq "x', 'nickName eq "x"', "userName gt"):
        response = await directory.client.get(
            "/scim/v2/Users", params={"filter": bad}, headers=directory.headers
        )
        assert_scim_error(response, 400, "invalidFilter")
    group = await directory.create_group("Blue Rockets")
    await directory.create_group("Red")
    groups = await directory.client.get(
        "/scim/v2/Groups",
        params={"filter": 'displayName co "rocket"', "excludedAttributes": "members"},
        headers=directory.headers,
    )
    assert [g["id"] for g in groups.json()["Resources"]] == [group["id"]]


async def test_group_membership_patches(directory: Directory, org: Org) -> None:
    ada = await directory.create_user("ada@example.org")
    bob = await directory.create_user("bob@example.org", "Bob")
    group = await directory.create_group("Rockets", [ada["id"]])
    assert [m["value"] for m in group["members"]] == [ada["id"]]

    async def patch(*operations: dict[str, object]) -> dict[str, object]:
        body = {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": operations,
        }
        response = await directory.request("PATCH", f"/Groups/{group['id']}", body)
        assert response.status_code == 200, response.text
        return dict(response.json())

    async def team_members() -> list[str]:
        response = await org.client.get(f"/team/{group['id']}/members", headers=org.admin)
        return sorted(m["Email"] for m in response.json())

    await patch({"op": "add", "path": "members", "value": [{"value": bob["id"]}]})
    assert await team_members() == ["ada@example.org", "bob@example.org"]
    await patch({"op": "remove", "path": f'members[value eq "{ada["id"]}"]'})
    assert await team_members() == ["bob@example.org"]
    after = await patch(
        {"op": "Replace", "path": "members", "value": [{"value": ada["id"]}]},
        {"op": "replace", "path": "displayName", "value": "Red Rockets"},
    )
    assert after["displayName"] == "Red Rockets"
    assert await team_members() == ["ada@example.org"]
    team = await org.client.get(f"/team/{group['id']}", headers=org.admin)
    assert team.json()["Name"] == "Red Rockets"
    unknown = await directory.request(
        "PATCH",
        f"/Groups/{group['id']}",
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [
                {"op": "add", "path": "members", "value": [{"value": str(uuid.uuid4())}]}
            ],
        },
    )
    assert_scim_error(unknown, 400, "invalidValue")


async def test_if_match_guards_changes(directory: Directory) -> None:
    user = await directory.create_user("ada@example.org")
    read = await directory.request("GET", f"/Users/{user['id']}")
    etag = read.headers["etag"]
    assert etag == read.json()["meta"]["version"]
    body = {"userName": "ada@example.org", "name": {"givenName": "Augusta"}}
    changed = await directory.request("PUT", f"/Users/{user['id']}", body, **{"If-Match": etag})
    assert changed.status_code == 200, changed.text
    assert changed.headers["etag"] != etag
    stale = await directory.request("PUT", f"/Users/{user['id']}", body, **{"If-Match": etag})
    assert_scim_error(stale, 412)
    stale_delete = await directory.request("DELETE", f"/Users/{user['id']}", **{"If-Match": etag})
    assert_scim_error(stale_delete, 412)


async def test_errors_and_media_types(directory: Directory) -> None:
    malformed = await directory.client.post(
        "/scim/v2/Users", content=b"{not json", headers=directory.headers
    )
    assert_scim_error(malformed, 400, "invalidSyntax")
    plain_json = await directory.client.post(
        "/scim/v2/Users",
        json={"userName": "plain@example.org"},
        headers={"Authorization": directory.headers["Authorization"]},
    )
    assert plain_json.status_code == 201, plain_json.text
    assert plain_json.headers["content-type"].startswith(SCIM)
    assert plain_json.headers["location"].endswith(f"/scim/v2/Users/{plain_json.json()['id']}")
    assert_scim_error(await directory.request("GET", "/Nothing"), 404)
    assert_scim_error(await directory.request("POST", "/ServiceProviderConfig", {}), 405)
    config = await directory.request("GET", "/ServiceProviderConfig")
    assert config.json()["patch"]["supported"] is True
    assert config.json()["etag"]["supported"] is True
    types = await directory.request("GET", "/ResourceTypes")
    assert sorted(r["name"] for r in types.json()["Resources"]) == ["Group", "User"]
    schemas = await directory.request("GET", "/Schemas")
    assert schemas.json()["totalResults"] == 2


async def test_deactivation_keeps_progress_and_ends_sign_in(
    directory: Directory, org: Org, world: World
) -> None:
    ada = await directory.create_user("ada@example.org")
    group = await directory.create_group("Rockets", [ada["id"]])
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 25]]])
    assert await completed(org, group["id"], tree.task(0, 0, 0)) == 10

    async def signin_code() -> str:
        with tenancy.acting_for(org.id):
            async with world.db.session() as session:
                return await sessions.mint_signin_code(
                    session,
                    settings=_settings(world),
                    org_id=org.id,
                    role=Role.MEMBER,
                    subject="ada",
                    email="ada@example.org",
                )

    signed_in = await org.client.post("/auth/session", json={"Code": await signin_code()})
    assert signed_in.status_code == 201, signed_in.text
    cookie = {"Cookie": f"{sessions.SESSION_COOKIE}={signed_in.cookies[sessions.SESSION_COOKIE]}"}
    pending_code = await signin_code()

    off = {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "path": "active", "value": "False"}],  # Entra's way
    }
    response = await directory.request("PATCH", f"/Users/{ada['id']}", off)
    assert response.status_code == 200, response.text
    assert response.json()["active"] is False
    assert "groups" not in response.json()
    members = await org.client.get(f"/team/{group['id']}/members", headers=org.admin)
    assert members.json() == []
    assert await score_of(org, group["id"]) == 10
    graph = await org.client.get(f"/team/{group['id']}/graph", headers=org.admin)
    assert graph.status_code == 200, graph.text
    assert graph.json()["Points"], graph.text
    assert (await org.client.get("/auth/session", headers=cookie)).status_code == 401
    refused = await org.client.post("/auth/session", json={"Code": await signin_code()})
    assert refused.status_code == 401
    assert "deactivated" in refused.json()["detail"]
    assert (await org.client.post("/auth/session", json={"Code": pending_code})).status_code == 401
    rejoin = await directory.request(
        "PATCH",
        f"/Groups/{group['id']}",
        {
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "add", "path": "members", "value": [{"value": ada["id"]}]}],
        },
    )
    assert "members" not in rejoin.json()  # a deactivated member joins no team

    on = {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "value": {"active": True}}],
    }
    assert (await directory.request("PATCH", f"/Users/{ada['id']}", on)).json()["active"] is True
    back = await org.client.post("/auth/session", json={"Code": await signin_code()})
    assert back.status_code == 201, back.text


async def test_deleting_a_user_keeps_its_teams_progress(
    directory: Directory, org: Org, world: World
) -> None:
    ada = await directory.create_user("ada@example.org")
    group = await directory.create_group("Rockets", [ada["id"]])
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    await completed(org, group["id"], tree.task(0, 0, 0))
    deleted = await directory.request("DELETE", f"/Users/{ada['id']}")
    assert deleted.status_code == 204
    assert_scim_error(await directory.request("GET", f"/Users/{ada['id']}"), 404)
    assert await score_of(org, group["id"]) == 10
    group_now = await directory.request("GET", f"/Groups/{group['id']}")
    assert "members" not in group_now.json()


def _settings(world: World) -> Settings:
    return Settings(_env_file=None)


async def test_entra_style_patches(directory: Directory) -> None:
    user = await directory.create_user("ada@example.org")
    body = {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [
            {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "ada@new.example"},
            {"op": "Replace", "path": "userName", "value": "ada@new.example"},
            {"op": "Add", "value": {"name.givenName": "Augusta", "externalId": "e-1"}},
        ],
    }
    response = await directory.request("PATCH", f"/Users/{user['id']}", body)
    assert response.status_code == 200, response.text
    patched = response.json()
    assert patched["userName"] == "ada@new.example"
    # The directory addressed the untyped e-mail as its work one: it is kept so.
    assert patched["emails"] == [{"value": "ada@new.example", "type": "work", "primary": True}]
    assert patched["name"] == {"givenName": "Augusta"}
    assert patched["externalId"] == "e-1"
    found = await directory.client.get(
        "/scim/v2/Users", params={"filter": 'externalId eq "e-1"'}, headers=directory.headers
    )
    assert [u["id"] for u in found.json()["Resources"]] == [user["id"]]


async def test_hostile_input_gets_scim_errors_never_a_5xx(directory: Directory) -> None:
    users = "/scim/v2/Users"
    long_filter = await directory.client.get(
        users, params={"filter": 'userName eq "' + "a" * 5000 + '"'}, headers=directory.headers
    )
    assert_scim_error(long_filter, 400)
    huge = await directory.client.post(
        users,
        content=b'{"userName": "' + b"a" * (6 * 1024 * 1024) + b'"}',
        headers=directory.headers,
    )
    assert_scim_error(huge, 413)
    nul = await directory.request("POST", "/Users", {"userName": "a\u0000@example.org"})
    assert_scim_error(nul, 400)
    deep = await directory.client.post(
        users, content=b"[" * 500 + b"]" * 500, headers=directory.headers
    )
    assert_scim_error(deep, 400)
    wrong_type = await directory.request("POST", "/Users", {"userName": 5, "active": "maybe"})
    assert_scim_error(wrong_type, 400)
    not_object = await directory.request("POST", "/Groups", ["x"])
    assert_scim_error(not_object, 400)
    invisible = await directory.request("POST", "/Groups", {"displayName": "\u200b"})
    assert_scim_error(invisible, 400, "invalidValue")
    start = await directory.client.get(users, params={"startIndex": "x"}, headers=directory.headers)
    assert_scim_error(start, 400)
    odd = await directory.client.get(
        users, params={"startIndex": -5, "count": -1}, headers=directory.headers
    )
    assert odd.status_code == 200
    assert (odd.json()["startIndex"], odd.json()["itemsPerPage"]) == (1, 0)


async def test_concurrent_creations_of_one_user_make_one(directory: Directory) -> None:
    import anyio

    statuses: list[int] = []

    async def create() -> None:
        response = await directory.request(
            "POST", "/Users", {"userName": "twin@example.org", "name": {"givenName": "Twin"}}
        )
        statuses.append(response.status_code)
        if response.status_code != 201:
            assert_scim_error(response, 409, "uniqueness")

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(create)
    assert sorted(statuses) == [201, 409, 409, 409]
    listed = await directory.request("GET", "/Users")
    assert listed.json()["totalResults"] == 1

"""Sign-in across organizations: two organizations each have a member with the SAME
e-mail address, user name and external id (made in both orders). A sign-in link or an
invitation of one signs into that one only, its session reads nothing of the other, and
deactivating the member in one leaves the other's member signing in.

The mail fixtures (the loopback SMTP server, the mail settings) are this module's own,
so that they override nothing for the other tests of this folder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from questline.auth import sessions
from tests.factories import Org, World
from tests.mail.conftest import mailbox, settings
from tests.mail.smtp_server import Mailbox
from tests.mail.support import deliver
from tests.scim.conftest import directory_for
from tests.scim.support import PATCH_OP, Directory
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

__all__ = ["mailbox", "settings"]  # the mail tests' own fixtures: a loopback SMTP server

EMAIL = "ada@example.org"


@dataclass
class Side:
    """One organization: its directory, its member Ada (same address as the other's),
    and a team of its own with her in it."""

    org: Org
    directory: Directory
    ada: dict[str, Any]
    team: dict[str, Any]


async def side(world: World, team_name: str) -> Side:
    org = world.org()
    directory = await directory_for(org, world)
    ada = await directory.create_user(EMAIL, externalId="ext-ada")
    team = await directory.create_group(team_name, [ada["id"]])
    return Side(org, directory, ada, team)


async def two_sides(world: World, a_first: bool) -> tuple[Side, Side]:
    if a_first:
        a = await side(world, "Team of A")
        b = await side(world, "Team of B")
    else:
        b = await side(world, "Team of B")
        a = await side(world, "Team of A")
    return a, b


async def link_code(
    client: httpx.AsyncClient, state: AppHarness, mailbox: Mailbox, org: Org
) -> str:
    before = len(mailbox.messages())
    asked = await client.post(
        "/auth/signin-link", json={"OrganizationId": str(org.id), "Email": EMAIL}
    )
    assert asked.status_code == 202, asked.text
    await deliver(state)
    new = mailbox.messages()[before:]
    assert len(new) == 1, [m.recipients for m in new]
    return new[0].code


async def invite_code(
    client: httpx.AsyncClient, state: AppHarness, mailbox: Mailbox, s: Side
) -> str:
    before = len(mailbox.messages())
    invited = await client.post(f"/member/{s.ada['id']}/invite", headers=s.org.admin)
    assert invited.status_code == 202, invited.text
    await deliver(state)
    [mail] = mailbox.messages()[before:]
    return mail.code


async def sign_in(client: httpx.AsyncClient, code: str) -> tuple[dict[str, Any], str]:
    signed_in = await client.post("/auth/session", json={"Code": code})
    assert signed_in.status_code == 201, signed_in.text
    cookie = signed_in.cookies[sessions.SESSION_COOKIE]
    client.cookies.clear()
    return dict(signed_in.json()), cookie


def jar(cookie: str) -> dict[str, str]:
    return {"Cookie": f"{sessions.SESSION_COOKIE}={cookie}"}


async def assert_reads_only(
    client: httpx.AsyncClient, cookie: str, mine: Side, other: Side
) -> None:
    """The session reads its own organization and nothing of the other."""
    info = await client.get("/auth/session", headers=jar(cookie))
    assert info.status_code == 200, info.text
    assert info.json()["OrganizationId"] == str(mine.org.id)
    assert info.json()["TeamIds"] == [mine.team["id"]]
    teams = await client.get("/team", headers=jar(cookie))
    assert teams.status_code == 200, teams.text
    assert [t["Id"] for t in teams.json()] == [mine.team["id"]]
    board = await client.get("/leaderboard", headers=jar(cookie))
    assert [e["TeamId"] for e in board.json()] == [mine.team["id"]]
    for path in (f"/team/{other.team['id']}", f"/member/{other.ada['id']}"):
        refused = await client.get(path, headers=jar(cookie))
        assert refused.status_code == 404, (path, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
    assert (await client.get(f"/member/{mine.ada['id']}", headers=jar(cookie))).status_code == 200


@pytest.mark.parametrize("a_first", [True, False], ids=["a-first", "b-first"])
async def test_a_link_or_invitation_of_one_organization_signs_into_it_only(
    client: httpx.AsyncClient,
    app_state: AppHarness,
    world: World,
    mailbox: Mailbox,
    a_first: bool,
) -> None:
    a, b = await two_sides(world, a_first)
    for code in (
        await link_code(client, app_state, mailbox, a.org),
        await invite_code(client, app_state, mailbox, a),
    ):
        # No body names another organization for a code: it is refused, and spends nothing.
        steered = await client.post(
            "/auth/session", json={"Code": code, "OrganizationId": str(b.org.id)}
        )
        assert steered.status_code == 422, steered.text
        assert sessions.SESSION_COOKIE not in steered.cookies
        info, cookie = await sign_in(client, code)
        assert (info["OrganizationId"], info["Email"], info["Role"]) == (
            str(a.org.id),
            EMAIL,
            "member",
        )
        await assert_reads_only(client, cookie, a, b)
        # Spent: used again, it yields no session anywhere.
        again = await client.post("/auth/session", json={"Code": code})
        assert again.status_code == 401
    # B's own link signs into B, and reads nothing of A.
    info, cookie = await sign_in(client, await link_code(client, app_state, mailbox, b.org))
    assert info["OrganizationId"] == str(b.org.id)
    await assert_reads_only(client, cookie, b, a)


@pytest.mark.parametrize("a_first", [True, False], ids=["a-first", "b-first"])
async def test_deactivating_the_member_in_one_organization_leaves_the_other_signing_in(
    client: httpx.AsyncClient,
    app_state: AppHarness,
    world: World,
    mailbox: Mailbox,
    a_first: bool,
) -> None:
    a, b = await two_sides(world, a_first)
    _, a_cookie = await sign_in(client, await link_code(client, app_state, mailbox, a.org))
    _, b_cookie = await sign_in(client, await link_code(client, app_state, mailbox, b.org))
    b_pending = await invite_code(client, app_state, mailbox, b)

    off = {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "replace", "path": "active", "value": False}],
    }
    deactivated = await a.directory.request("PATCH", f"/Users/{a.ada['id']}", off)
    assert deactivated.status_code == 200, deactivated.text

    # A's session ends; B's goes on reading B only.
    assert (await client.get("/auth/session", headers=jar(a_cookie))).status_code == 401
    await assert_reads_only(client, b_cookie, b, a)
    # A sends her nothing and refuses her invitation; B still does both.
    before = len(mailbox.messages())
    asked = await client.post(
        "/auth/signin-link", json={"OrganizationId": str(a.org.id), "Email": EMAIL}
    )
    assert asked.status_code == 202
    await deliver(app_state)
    assert len(mailbox.messages()) == before
    refused = await client.post(f"/member/{a.ada['id']}/invite", headers=a.org.admin)
    assert refused.status_code == 409
    info, cookie = await sign_in(client, await link_code(client, app_state, mailbox, b.org))
    assert info["OrganizationId"] == str(b.org.id)
    await assert_reads_only(client, cookie, b, a)
    info, _ = await sign_in(client, b_pending)  # sent before A's deactivation
    assert info["OrganizationId"] == str(b.org.id)
    # B's directory sees its member active.
    user = await b.directory.request("GET", f"/Users/{b.ada['id']}")
    assert user.status_code == 200, user.text
    assert user.json().get("active", True) is True  # never set false: active

    # Deleting her in A changes nothing for B either.
    assert (await a.directory.request("DELETE", f"/Users/{a.ada['id']}")).status_code == 204
    await assert_reads_only(client, b_cookie, b, a)
    info, _ = await sign_in(client, await invite_code(client, app_state, mailbox, b))
    assert info["OrganizationId"] == str(b.org.id)

"""A member the directory deactivated or deleted signs in by no e-mailed link: none is
mailed to it (the answer to the request is the stranger's), a link or an invitation
mailed before no longer signs in, an invitation of it is refused (409), and every
invitation sent is in the audit log (never its link)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.factories import Org, World
from tests.mail.smtp_server import Mailbox
from tests.mail.support import deliver, outbox
from tests.scim.conftest import directory_for
from tests.scim.support import PATCH_OP, Directory
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

OFF = {"schemas": [PATCH_OP], "Operations": [{"op": "replace", "path": "active", "value": False}]}


async def deactivate(directory: Directory, user: dict[str, Any]) -> None:
    response = await directory.request("PATCH", f"/Users/{user['id']}", OFF)
    assert response.status_code == 200, response.text
    assert response.json()["active"] is False


async def _ask(client: httpx.AsyncClient, org: Org, email: str) -> httpx.Response:
    return await client.post(
        "/auth/signin-link", json={"OrganizationId": str(org.id), "Email": email}
    )


def assert_problem(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"


async def test_no_link_is_mailed_to_a_deactivated_member_and_the_answer_does_not_tell(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    directory = await directory_for(org, world)
    ada = await directory.create_user("ada@example.org")
    await directory.create_user("bo@example.org", given="Bo")
    await deactivate(directory, ada)

    answers = [
        await _ask(client, org, "bo@example.org"),
        await _ask(client, org, "ada@example.org"),
        await _ask(client, org, "nobody@example.org"),
    ]
    assert {a.status_code for a in answers} == {202}
    assert {a.content for a in answers} == {answers[0].content}
    assert {a.headers.get("cache-control") for a in answers} == {"no-store"}

    await deliver(app_state)
    assert [m.recipients for m in mailbox.messages()] == [["bo@example.org"]]
    # Nothing is kept of the deactivated member's request, as of a stranger's.
    assert [row["email"] for row in await outbox(app_state.db)] == ["bo@example.org"]


async def test_a_link_mailed_before_the_deactivation_no_longer_signs_in(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    directory = await directory_for(org, world)
    ada = await directory.create_user("ada@example.org")
    assert (await _ask(client, org, "ada@example.org")).status_code == 202
    invited = await client.post(f"/member/{ada['id']}/invite", headers=org.admin)
    assert invited.status_code == 202, invited.text
    await deliver(app_state)
    link, invitation = mailbox.messages()
    assert link.code != invitation.code

    await deactivate(directory, ada)
    for mail in (link, invitation):
        refused = await client.post("/auth/session", json={"Code": mail.code})
        assert_problem(refused, 401)
    assert client.cookies.get("questline_session") is None


async def test_a_link_mailed_before_the_deletion_no_longer_signs_in(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    directory = await directory_for(org, world)
    ada = await directory.create_user("ada@example.org")
    assert (await _ask(client, org, "ada@example.org")).status_code == 202
    assert (await client.post(f"/member/{ada['id']}/invite", headers=org.admin)).status_code == 202
    await deliver(app_state)
    assert len(mailbox.messages()) == 2

    assert (await directory.request("DELETE", f"/Users/{ada['id']}")).status_code == 204
    for mail in mailbox.messages():
        assert_problem(await client.post("/auth/session", json={"Code": mail.code}), 401)
    # Another member with the same address later is someone else: the old links stay dead.
    await directory.create_user("ada@example.org")
    for mail in mailbox.messages():
        assert_problem(await client.post("/auth/session", json={"Code": mail.code}), 401)


async def test_a_deactivated_member_is_not_invited(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    directory = await directory_for(org, world)
    ada = await directory.create_user("ada@example.org")
    bo = await directory.create_user("bo@example.org", given="Bo")
    # Queued while active, sent after the deactivation: not sent.
    assert (await client.post(f"/member/{bo['id']}/invite", headers=org.admin)).status_code == 202
    await deactivate(directory, ada)
    await deactivate(directory, bo)

    refused = await client.post(f"/member/{ada['id']}/invite", headers=org.admin)
    assert_problem(refused, 409)
    assert "deactivated" in refused.json()["detail"]
    await deliver(app_state)
    assert mailbox.messages() == []
    [row] = await outbox(app_state.db)
    assert (row["email"], row["status"]) == ("bo@example.org", "Skipped")
    assert "deactivated" in row["error"]


async def test_invitations_sent_are_in_the_audit_log_without_their_link(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    ada = await org.create_member(email="ada@example.org")
    invited = await client.post(f"/member/{ada['Id']}/invite", headers=org.admin)
    assert invited.status_code == 202, invited.text
    team = await org.create_team("Owls")
    added = await client.post(
        f"/team/{team['Id']}/members",
        json={"email": "bo@example.org", "givenName": "Bo", "Invite": True},
        headers=org.admin,
    )
    assert added.status_code == 201, added.text
    await deliver(app_state)
    codes = [mail.code for mail in mailbox.messages()]
    assert len(codes) == 2

    log = await client.get(
        "/audit", params={"action": "member.invited", "limit": 100}, headers=org.admin
    )
    assert log.status_code == 200, log.text
    entries = sorted(log.json(), key=lambda e: e["Changes"]["Email"]["After"])
    assert [(e["TargetType"], e["TargetId"]) for e in entries] == [
        ("member", ada["Id"]),
        ("member", added.json()["Id"]),
    ]
    assert [e["Changes"]["Email"]["After"] for e in entries] == [
        "ada@example.org",
        "bo@example.org",
    ]
    assert entries[0]["Changes"]["MailId"]["After"] == invited.json()["Id"]
    assert {(e["ActorRole"], e["ActorVia"]) for e in entries} == {("admin", "token")}
    assert {e["RequestId"] for e in entries} == {
        invited.headers["X-Request-Id"],
        added.headers["X-Request-Id"],
    }
    text = log.text
    for code in codes:
        assert code not in text
    assert "#code=" not in text
    # Another organization's log does not show them.
    other = world.org()
    theirs = await client.get("/audit", params={"action": "member.invited"}, headers=other.admin)
    assert theirs.json() == []

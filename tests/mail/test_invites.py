"""Invitations: ``POST /member/{id}/invite``, ``Invite`` on adding members and on bulk
imports; the outbox (rolled back → nothing), header safety, retries, TLS and login."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import update

from questline.config import Settings
from questline.mail import service as mail_service
from questline.members.models import Member
from questline.organizations.models import Organization
from questline.storage import tenancy
from tests.factories import World
from tests.mail.conftest import PUBLIC_URL, mail_settings
from tests.mail.smtp_server import Mailbox, smtp_server
from tests.mail.support import deliver, outbox
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def test_an_admin_invites_a_member_with_the_organizations_name(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    named = await client.patch(
        "/organization", json={"Name": "Example Learning"}, headers=org.admin
    )
    assert named.status_code == 200, named.text
    assert named.json()["Name"] == "Example Learning"
    member = await org.create_member(email="grace@example.org")

    invited = await client.post(f"/member/{member['Id']}/invite", headers=org.admin)
    assert invited.status_code == 202, invited.text
    body = invited.json()
    assert (body["MemberId"], body["Email"], body["Status"]) == (
        member["Id"],
        "grace@example.org",
        "Queued",
    )
    await deliver(app_state)
    [mail] = mailbox.messages()
    assert mail.recipients == ["grace@example.org"]
    assert mail.message["Subject"] == "Example Learning invites you to Questline"
    assert "Example Learning invites you" in mail.text
    assert "72 hours" in mail.text
    assert f"{PUBLIC_URL}/ui/#/signin" in mail.text
    signed_in = await client.post("/auth/session", json={"Code": mail.code})
    assert signed_in.status_code == 201
    assert (signed_in.json()["Role"], signed_in.json()["Email"]) == ("member", "grace@example.org")


async def test_invitations_are_for_admins_of_the_members_organization(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org, other = world.org(), world.org()
    member = await org.create_member()
    path = f"/member/{member['Id']}/invite"
    assert (await client.post(path, headers=other.admin)).status_code == 404
    assert (await client.post(path, headers=org.member)).status_code == 403
    assert (await client.post(path)).status_code == 401
    assert (
        await client.post(f"/member/{uuid.uuid4()}/invite", headers=org.admin)
    ).status_code == 404
    assert (await client.post("/member/not-a-uuid/invite", headers=org.admin)).status_code == 404
    assert await outbox(app_state.db) == []


async def test_adding_a_member_with_invite_sends_once(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    team = await org.create_team("Owls")
    body = {"email": "ada@example.org", "givenName": "Ada", "Invite": True}
    added = await client.post(f"/team/{team['Id']}/members", json=body, headers=org.admin)
    assert added.status_code == 201, added.text
    again = await client.post(f"/team/{team['Id']}/members", json=body, headers=org.admin)
    assert again.status_code == 200  # already in the team: no second invitation
    plain = await client.post(
        f"/team/{team['Id']}/members",
        json={"email": "bo@example.org", "givenName": "Bo"},
        headers=org.admin,
    )
    assert plain.status_code == 201
    await deliver(app_state)
    assert [m.recipients for m in mailbox.messages()] == [["ada@example.org"]]

    # POST /team with Invite: each member of the new team.
    made = await client.post(
        "/team",
        json={"name": "Foxes", "members": [added.json()["Id"], plain.json()["Id"]], "Invite": True},
        headers=org.admin,
    )
    assert made.status_code == 201, made.text
    await deliver(app_state)
    assert sorted(m.recipients[0] for m in mailbox.messages()[1:]) == [
        "ada@example.org",
        "bo@example.org",
    ]


async def _queue_then_fail(state: AppHarness, org_id: uuid.UUID, member_id: uuid.UUID) -> None:
    with tenancy.acting_for(org_id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with state.db.session(write=True) as session:
            queued = await mail_service.queue_invites(
                session, org_id=org_id, member_ids=[member_id]
            )
            assert list(queued) == [member_id]
            raise RuntimeError("the change failed after queueing")


async def test_a_rolled_back_change_sends_nothing(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    member = await org.create_member(email="ada@example.org")
    # A dry-run import creates and queues everything, then rolls it back.
    csv = "team,email,givenName,tags,invite\r\nOwls,new@example.org,New,,true\r\n"
    dry = await client.post(
        "/team/bulk?dryRun=true",
        content=csv,
        headers={**org.admin, "Content-Type": "text/csv"},
    )
    assert dry.status_code == 200, dry.text
    # A failing import (a name taken) queues nothing either.
    await org.create_team("Taken")
    failed = await client.post(
        "/team/bulk",
        json=[{"name": "Fine", "members": [member["Id"]], "Invite": True}, {"name": "Taken"}],
        headers=org.admin,
    )
    assert failed.status_code == 409
    # And a transaction that queues an invitation and then fails.
    with pytest.raises(RuntimeError):
        await _queue_then_fail(app_state, org.id, uuid.UUID(member["Id"]))
    assert await outbox(app_state.db) == []
    await deliver(app_state)
    assert mailbox.messages() == []


async def test_bulk_imports_invite_by_team_json_and_by_row_csv(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    ada = await org.create_member(email="ada@example.org")
    bo = await org.create_member(email="bo@example.org")
    json_import = await client.post(
        "/team/bulk",
        json=[
            {"name": "Invited", "members": [ada["Id"]], "Invite": True},
            {"name": "Quiet", "members": [bo["Id"]]},
        ],
        headers=org.admin,
    )
    assert json_import.status_code == 201, json_import.text
    csv = (
        "Team,Email,Given Name,Tags,Invite\r\n"
        "Rows,cy@example.org,Cy,,yes\r\n"
        "Rows,di@example.org,Di,,\r\n"
        "Rows,ed@example.org,Ed,,false\r\n"
    )
    csv_import = await client.post(
        "/team/bulk", content=csv, headers={**org.admin, "Content-Type": "text/csv"}
    )
    assert csv_import.status_code == 201, csv_import.text
    bad = await client.post(
        "/team/bulk",
        content="team,email,givenName,tags,invite\r\nX,x@example.org,X,,maybe\r\nY,,,,true\r\n",
        headers={**org.admin, "Content-Type": "text/csv"},
    )
    assert bad.status_code == 422
    assert {e["field"] for e in bad.json()["errors"]} == {"line 2: invite", "line 3: invite"}
    await deliver(app_state)
    assert sorted(m.recipients[0] for m in mailbox.messages()) == [
        "ada@example.org",
        "cy@example.org",
    ]


async def test_names_with_line_breaks_cannot_add_headers(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    team = await org.create_team()
    refused = await client.post(
        f"/team/{team['Id']}/members",
        json={"email": "eve@example.org", "givenName": "Eve\r\nBcc: victim@example.org"},
        headers=org.admin,
    )
    assert refused.status_code == 422  # the API takes no such name ...
    named = await client.patch(
        "/organization", json={"Name": "Org\nBcc: victim@example.org"}, headers=org.admin
    )
    assert named.status_code == 422
    member = await org.create_member(email="eve@example.org")
    # ... and a name that reached the database some other way is made one line.
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with app_state.db.session(write=True) as session:
            await session.execute(
                update(Member)
                .where(Member.id == uuid.UUID(member["Id"]))
                .values(given_name="Eve\r\nBcc: victim@example.org\r\nX-Evil: 1")
            )
            await session.execute(
                update(Organization)
                .where(Organization.id == org.id)
                .values(name="Acme\r\nBcc: victim2@example.org\u2028Reply-To: x@evil.example")
            )
    assert (
        await client.post(f"/member/{member['Id']}/invite", headers=org.admin)
    ).status_code == 202
    await deliver(app_state)
    [mail] = mailbox.messages()
    assert mail.recipients == ["eve@example.org"]
    message = mail.message
    assert message["Bcc"] is None
    assert message["X-Evil"] is None
    assert message["Reply-To"] is None
    assert len(message.get_all("To") or []) == 1
    assert message["To"].addresses[0].addr_spec == "eve@example.org"
    assert "\n" not in message["To"].addresses[0].display_name
    assert (
        "Acme Bcc: victim2@example.org Reply-To: x@evil.example invites you" in message["Subject"]
    )
    header_block = re.split(rb"\r?\n\r?\n", mail.raw, maxsplit=1)[0]
    assert not any(
        line.lower().startswith((b"bcc:", b"x-evil:", b"reply-to:"))
        for line in header_block.splitlines()
    )


async def test_a_temporary_refusal_is_retried_and_a_permanent_one_is_not(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    member = await org.create_member(email="ada@example.org")
    mailbox.replies = ["451 4.3.0 Try again later"]
    assert (
        await client.post(f"/member/{member['Id']}/invite", headers=org.admin)
    ).status_code == 202
    await deliver(app_state)
    [mail] = mailbox.messages()
    [row] = await outbox(app_state.db)
    assert (row["status"], row["attempts"]) == ("Sent", 2)
    # The code of the refused attempt was never delivered; the one delivered works.
    assert (await client.post("/auth/session", json={"Code": mail.code})).status_code == 201

    mailbox.replies = ["550 5.1.1 No such mailbox"]
    assert (
        await client.post(f"/member/{member['Id']}/invite", headers=org.admin)
    ).status_code == 202
    await deliver(app_state)
    failed = (await outbox(app_state.db))[-1]
    assert (failed["status"], failed["attempts"]) == ("Failed", 1)
    assert "550" in failed["error"]
    assert len(mailbox.messages()) == 1


async def test_an_unreachable_server_is_retried_until_the_attempts_run_out(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, settings: Settings
) -> None:
    org = world.org()
    member = await org.create_member()
    assert (
        await client.post(f"/member/{member['Id']}/invite", headers=org.admin)
    ).status_code == 202
    closed = settings.model_copy(update={"smtp_url": "smtp://127.0.0.1:9", "mail_max_attempts": 3})
    await deliver(app_state, settings=closed)
    [row] = await outbox(app_state.db)
    assert (row["status"], row["attempts"]) == ("Failed", 3)


async def test_starttls_and_a_login_from_the_url(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, tmp_path: Path
) -> None:
    org = world.org()
    member = await org.create_member(email="ada@example.org")
    with smtp_server(tls_and_login=(tmp_path, "questline", "p@ss:word")) as secure:
        assert secure.ca_file is not None
        app_state.settings = mail_settings(
            app_state.settings,
            secure,
            smtp_url=secure.url(userinfo="questline:p%40ss%3Aword@"),
            smtp_ca_file=secure.ca_file,
        )
        assert (
            await client.post(f"/member/{member['Id']}/invite", headers=org.admin)
        ).status_code == 202
        await deliver(app_state)
        [mail] = secure.messages()
        assert secure.logins == [("questline", "p@ss:word")]
        assert mail.recipients == ["ada@example.org"]

        # The user and password apart win over the URL's; an untrusted certificate fails.
        apart = mail_settings(
            app_state.settings,
            secure,
            smtp_username="questline",
            smtp_password="p@ss:word",
            smtp_ca_file=secure.ca_file,
        )
        assert (
            await client.post(f"/member/{member['Id']}/invite", headers=org.admin)
        ).status_code == 202
        await deliver(app_state, settings=apart)
        assert len(secure.messages()) == 2
        untrusted = mail_settings(
            app_state.settings, secure, smtp_ca_file=None, mail_max_attempts=1
        )
        assert (
            await client.post(f"/member/{member['Id']}/invite", headers=org.admin)
        ).status_code == 202
        await deliver(app_state, settings=untrusted)
        assert len(secure.messages()) == 2
        assert (await outbox(app_state.db))[-1]["status"] == "Failed"


async def test_the_organization_is_read_by_members_and_renamed_by_admins(
    client: httpx.AsyncClient, world: World
) -> None:
    org = world.org()
    read = await client.get("/organization", headers=org.member)
    assert read.status_code == 200
    assert (read.json()["Id"], read.json()["Name"]) == (str(org.id), None)
    assert (
        await client.patch("/organization", json={"Name": "X"}, headers=org.member)
    ).status_code == 403
    renamed = await client.patch("/organization", json={"name": "  Acme  "}, headers=org.admin)
    assert renamed.json()["Name"] == "Acme"
    cleared = await client.patch("/organization", json={"Name": None}, headers=org.admin)
    assert cleared.json()["Name"] is None
    other = world.org()
    assert (await client.get("/organization", headers=other.admin)).json()["Name"] is None

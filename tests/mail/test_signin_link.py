"""``POST /auth/signin-link``: a member gets an e-mail whose link signs in; anyone else
gets the same answer and nothing; limits; no SMTP → 409."""

from __future__ import annotations

import concurrent.futures
import uuid

import httpx
import pytest
from typer.testing import CliRunner

from questline.cli.main import app as cli
from questline.config import Settings
from questline.mail.schemas import SIGNIN_LINK_ACCEPTED
from tests.factories import World
from tests.mail.conftest import MAIL_FROM, PUBLIC_URL
from tests.mail.smtp_server import Mailbox
from tests.mail.support import deliver, outbox
from tests.support.harness import AppHarness
from tests.support.live import database_env

pytestmark = pytest.mark.anyio


async def _ask(client: httpx.AsyncClient, org_id: object, email: str) -> httpx.Response:
    return await client.post(
        "/auth/signin-link", json={"OrganizationId": str(org_id), "Email": email}
    )


async def test_a_member_gets_a_link_that_signs_in_once(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    team = await org.create_team("Owls")
    added = await org.add_member(team["Id"], email="Ada@Example.org", given_name="Ada")
    assert added.status_code == 201

    asked = await _ask(client, org.id, "ada@EXAMPLE.org")  # any case
    assert asked.status_code == 202, asked.text
    assert asked.json() == {"Status": "Accepted", "Detail": SIGNIN_LINK_ACCEPTED}
    assert mailbox.messages() == []  # never sent inside the request

    await deliver(app_state)
    [mail] = mailbox.messages()
    stored = added.json()["Email"]  # as the member was stored (the domain lower-cased)
    assert mail.recipients == [stored]
    assert mail.sender == "questline@example.org"
    message = mail.message
    assert message["To"] == f"Ada <{stored}>"
    assert message["From"] == MAIL_FROM
    assert "sign-in link" in message["Subject"]
    assert message["Auto-Submitted"] == "auto-generated"
    assert mail.link.startswith(f"{PUBLIC_URL}/ui/#code=")  # absolute, on the public URL
    assert mail.link in mail.text
    assert f'href="{mail.link}"' in mail.html
    assert "Hello Ada," in mail.text

    signed_in = await client.post("/auth/session", json={"Code": mail.code})
    assert signed_in.status_code == 201, signed_in.text
    info = signed_in.json()
    assert info["Role"] == "member"
    assert info["OrganizationId"] == str(org.id)
    assert info["Email"] == stored
    assert info["TeamIds"] == [team["Id"]]
    session = await client.get("/auth/session")
    assert session.status_code == 200
    assert (await client.get("/team")).status_code == 200  # the cookie works
    client.cookies.clear()
    again = await client.post("/auth/session", json={"Code": mail.code})
    assert again.status_code == 401  # one time
    assert [row["status"] for row in await outbox(app_state.db)] == ["Sent"]


async def test_a_stranger_gets_the_same_answer_and_no_mail(
    client: httpx.AsyncClient, app_state: AppHarness, world: World, mailbox: Mailbox
) -> None:
    org = world.org()
    await org.create_member(email="ada@example.org")
    other = world.org()
    await other.create_member(email="grace@example.org")

    member = await _ask(client, org.id, "ada@example.org")
    answers = [
        member,
        await _ask(client, org.id, "nobody@example.org"),
        # A member of another organization is nobody here.
        await _ask(client, org.id, "grace@example.org"),
        await _ask(client, uuid.uuid4(), "ada@example.org"),  # no such organization
    ]
    assert {a.status_code for a in answers} == {202}
    assert {a.content for a in answers} == {member.content}
    assert {a.headers["content-type"] for a in answers} == {"application/json"}
    assert {a.headers.get("cache-control") for a in answers} == {"no-store"}
    # The same work before answering: each request queued one message.
    assert len(await outbox(app_state.db)) == 4

    await deliver(app_state)
    [mail] = mailbox.messages()
    assert mail.recipients == ["ada@example.org"]
    # Strangers' addresses are not kept once decided.
    assert [row["email"] for row in await outbox(app_state.db)] == ["ada@example.org"]


async def test_bad_input_is_a_problem_for_everyone_alike(
    client: httpx.AsyncClient, world: World
) -> None:
    org = world.org()
    for body in (
        {"OrganizationId": str(org.id), "Email": "not-an-address"},
        {"OrganizationId": "nope", "Email": "ada@example.org"},
        {"OrganizationId": str(org.id), "Email": "ada@example.org", "Role": "admin"},
        {"OrganizationId": str(org.id), "Email": "a\r\nBcc: x@example.org"},
        {"OrganizationId": str(org.id), "Email": "x" * 400 + "@example.org"},
    ):
        refused = await client.post("/auth/signin-link", json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.headers["content-type"] == "application/problem+json"
    cross = await client.post(
        "/auth/signin-link",
        json={"OrganizationId": str(org.id), "Email": "ada@example.org"},
        headers={"Origin": "https://evil.example"},
    )
    assert cross.status_code == 403


async def test_requests_are_limited_per_address_and_per_client(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    app_state.configure(
        rate_limit_enabled=True,
        mail_signin_limit_per_address="2/hour",
        mail_signin_limit_per_client="5/hour",
    )
    org = world.org()
    await org.create_member(email="ada@example.org")
    for email in ("ada@example.org", "nobody@example.org"):  # members and strangers alike
        for _ in range(2):
            assert (await _ask(client, org.id, email)).status_code == 202
        refused = await _ask(client, org.id, email.upper())  # the address ignores case
        assert refused.status_code == 429
        assert refused.headers["content-type"] == "application/problem+json"
        assert int(refused.headers["Retry-After"]) > 0
        assert "this address" in refused.json()["detail"]
    # Four accepted from this client so far: one more passes, then its own limit is hit.
    assert (await _ask(client, org.id, "third@example.org")).status_code == 202
    refused = await _ask(client, org.id, "fourth@example.org")
    assert refused.status_code == 429
    assert "this client" in refused.json()["detail"]
    assert len(await outbox(app_state.db)) == 5  # a refused request queues nothing


async def test_without_smtp_settings_the_answer_is_409_and_the_cli_still_mints(
    client: httpx.AsyncClient,
    app_state: AppHarness,
    world: World,
    settings: Settings,
) -> None:
    org = world.org()
    member = await org.create_member(email="ada@example.org")
    for missing, change in (
        ("QUESTLINE_SMTP_URL", {"smtp_url": None}),
        ("QUESTLINE_MAIL_FROM", {"mail_from": None}),
    ):
        app_state.settings = settings.model_copy(update=change)
        for refused in (
            await _ask(client, org.id, "ada@example.org"),
            await client.post(f"/member/{member['Id']}/invite", headers=org.admin),
        ):
            assert refused.status_code == 409, refused.text
            assert refused.headers["content-type"] == "application/problem+json"
            problem = refused.json()
            assert problem["type"].endswith("/problems/mail-not-configured")
            assert missing in problem["detail"]
            assert "Retry-After" not in refused.headers
    # No public URL configured: a link to 127.0.0.1 would lead nowhere; refused too.
    unset = settings.model_dump(exclude={"public_url"})
    app_state.settings = Settings(**unset)
    refused = await _ask(client, org.id, "ada@example.org")
    assert refused.status_code == 409
    assert "QUESTLINE_PUBLIC_URL" in refused.json()["detail"]
    assert await outbox(app_state.db) == []

    # The command line mints links all the same (in a thread: it runs its own loop).
    env = {"QUESTLINE_DATA_DIR": str(settings.data_dir), "QUESTLINE_SMTP_URL": ""}
    env.update(database_env(settings))
    args = ["signin-link", "--org", str(org.id), "--role", "member", "--email", "ada@example.org"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        result = pool.submit(CliRunner().invoke, cli, args, env=env).result()
    assert result.exit_code == 0, result.output
    code = result.output.strip().splitlines()[-1].partition("#code=")[2]
    assert (await client.post("/auth/session", json={"Code": code})).status_code == 201


async def test_an_unusable_smtp_url_stops_the_start(migrated_settings: Settings) -> None:
    from questline.app import create_app
    from questline.mail.smtp import SmtpConfigError

    for url, reason in (
        ("http://mail.example.org", "smtp://"),
        ("smtp://", "names no host"),
        ("smtp://mail.example.org:notaport", "not a URL"),
    ):
        with pytest.raises(SmtpConfigError, match=reason):
            create_app(migrated_settings.model_copy(update={"smtp_url": url}))
    with pytest.raises(ValueError, match="QUESTLINE_MAIL_FROM"):
        create_app(migrated_settings.model_copy(update={"mail_from": "no address here"}))

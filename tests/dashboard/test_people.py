"""End-to-end: how people get in, driven in Chromium against a live server (issue 27).

An admin mints the SCIM token and copies the base URL the directory needs, configures
single sign-on against the test provider and removes it, adds a member with "E-mail an
invitation" ticked and invites another from the Members page; a person asks for a
sign-in link on the sign-in page. Every mail is read from a real SMTP server on loopback
(aiosmtpd), and its link is followed in a fresh browser that lands signed in.

The live server of this module has mail (and the plain-http test provider) configured
in the ``.env`` of its data directory, where ``questline serve`` runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from questline.web.identity import Role
from tests.conftest import BACKENDS
from tests.dashboard.browser import Guard, Pages, check_accessibility
from tests.dashboard.live import LiveServer, live_database, live_server
from tests.dashboard.seed import SeededOrg, seed_org
from tests.dashboard.test_e2e import LEADERBOARD_READY, MEMBERS_READY, TEAM_READY, visit
from tests.dashboard.test_myteam import READY as MYTEAM_READY
from tests.mail.smtp_server import Mailbox, Received, smtp_server
from tests.sso.provider import QUIET, Provider, running_provider
from tests.support.postgres import PostgresServer

pytestmark = [QUIET, pytest.mark.slow]


@pytest.fixture(scope="module")
def mailbox() -> Iterator[Mailbox]:
    with smtp_server() as running:
        yield running


@pytest.fixture(scope="module")
def idp() -> Iterator[Provider]:
    with running_provider() as running:
        yield running


@pytest.fixture(scope="module", params=BACKENDS)
def people_live(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest, mailbox: Mailbox
) -> Iterator[LiveServer]:
    """A live server per backend that sends mail to ``mailbox`` and accepts the
    loopback test provider."""
    backend = str(request.param)
    data_dir: Path = tmp_path_factory.mktemp(f"people-{backend}")
    (data_dir / ".env").write_text(
        f"QUESTLINE_SMTP_URL={mailbox.url()}\n"
        'QUESTLINE_MAIL_FROM="Questline <questline@example.org>"\n'
        "QUESTLINE_MAIL_POLL_SECONDS=0.2\n"
        "QUESTLINE_OIDC_ALLOW_HTTP=true\n"
        "QUESTLINE_OIDC_ALLOW_PRIVATE_ISSUERS=true\n"
        "QUESTLINE_OIDC_HTTP_TIMEOUT_SECONDS=60\n"
    )
    url = owner_url = None
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url, owner_url = live_database(server, "questline_people")
    with live_server(data_dir, url, owner_url=owner_url) as running:
        yield running


@pytest.fixture
def people_pages(people_live: LiveServer, browser: Browser) -> Iterator[Pages]:
    people_live.ready()
    guard = Guard(origin=people_live.origin)
    opened = Pages(browser=browser, origin=people_live.origin, guard=guard)
    try:
        yield opened
    finally:
        opened.close()
    opened.guard.check()


@pytest.fixture
def org(people_live: LiveServer) -> SeededOrg:
    return seed_org(people_live.ready())


def sign_in_as_admin(pages: Pages, live: LiveServer, org: SeededOrg) -> Page:
    page = pages.open()
    page.goto(live.signin_link(org.id, Role.ADMIN, subject="e2e-admin"))
    page.locator(LEADERBOARD_READY).wait_for(state="attached")
    return page


def mail_to(mailbox: Mailbox, address: str, already: int) -> Received:
    """The first message to ``address`` after the first ``already`` (a deadline to fail
    on, not a timed assertion: the server's sender polls its outbox)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = [m for m in mailbox.messages()[already:] if address in m.recipients]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no mail to {address}")


def follow_link_signed_in(pages: Pages, mail: Received, email: str) -> Page:
    """A fresh browser opens the mailed link and lands signed in as that member."""
    profile = pages.new_context()
    page = pages.new_tab(profile)
    page.goto(mail.link)
    # A member of a team lands on My team, one of none on the leaderboard.
    page.locator(f"{LEADERBOARD_READY}, {MYTEAM_READY}").wait_for(state="attached")
    expect(page.get_by_test_id("session-role")).to_have_text("member")
    session = profile.request.get(f"{pages.origin}/auth/session")
    assert session.status == 200, session.text()
    assert session.json()["Email"] == email
    assert "#code=" not in page.url  # the code left the address bar
    return page


def test_an_admin_mints_the_scim_token_and_copies_the_base_url(
    people_pages: Pages, people_live: LiveServer, org: SeededOrg
) -> None:
    page = sign_in_as_admin(people_pages, people_live, org)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    visit(page, people_live, "/members", MEMBERS_READY)
    panel = page.get_by_test_id("scim-panel")
    expect(panel).to_contain_text("Directory provisioning (SCIM)")
    page.get_by_test_id("scim-days").fill("30")
    page.get_by_test_id("scim-token-create").click()
    base_url = page.get_by_test_id("scim-base-url")
    expect(base_url).to_have_text(f"{people_live.origin}/scim/v2")
    token = page.get_by_test_id("scim-token").input_value()
    assert token.startswith("qlscim_")  # a stored, revocable SCIM token, shown once

    page.get_by_test_id("scim-copy-base-url").click()
    expect(page.locator("#notice")).to_contain_text("SCIM base URL is on the clipboard")
    assert page.evaluate("navigator.clipboard.readText()") == f"{people_live.origin}/scim/v2"
    page.get_by_test_id("scim-copy-token").click()
    expect(page.locator("#notice")).to_contain_text("SCIM token is on the clipboard")
    assert page.evaluate("navigator.clipboard.readText()") == token
    check_accessibility(page, "the Members page with a SCIM token")

    # What the directory does with the two values: provision a user, seen on the page.
    scim = {"Authorization": f"Bearer {token}", "Content-Type": "application/scim+json"}
    user = {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": "lin@example.org",
        "name": {"givenName": "Lin"},
    }
    made = httpx.post(f"{people_live.origin}/scim/v2/Users", json=user, headers=scim)
    assert made.status_code == 201, made.text
    page.reload()
    page.locator(MEMBERS_READY).wait_for(state="attached")
    expect(page.get_by_test_id("org-members-table")).to_contain_text("lin@example.org")
    # The token does SCIM and nothing else.
    assert httpx.get(f"{people_live.origin}/team", headers=scim).status_code == 403


def test_an_admin_configures_single_sign_on_and_removes_it(
    people_pages: Pages, people_live: LiveServer, org: SeededOrg, idp: Provider
) -> None:
    people_pages.guard.allow_console(r"status of 404")  # "no SSO yet" as the page opens
    people_pages.guard.allow_console(r"status of 422")  # the unreachable issuer below
    page = sign_in_as_admin(people_pages, people_live, org)
    visit(page, people_live, "/sso", "[data-testid=sso-settings-form]")
    expect(page.get_by_test_id("sso-remove")).to_be_hidden()  # nothing configured yet

    # An issuer that answers nothing: the service says why, nothing is saved.
    page.get_by_test_id("sso-issuer").fill("http://127.0.0.1:9/realms/none")
    page.get_by_test_id("sso-client-id").fill("questline")
    page.get_by_test_id("sso-client-secret").fill("kc-secret")
    page.get_by_test_id("sso-save").click()
    expect(page.get_by_test_id("error-summary")).to_be_visible()
    with people_live.client(org.admin_token) as api:
        assert api.get("/organization/sso").status_code == 404

    page.get_by_test_id("sso-issuer").fill(idp.issuer)
    page.get_by_test_id("sso-admin-groups").fill("questline-admins, trainers")
    page.get_by_test_id("sso-save").click()
    expect(page.locator("#notice")).to_contain_text("Single sign-on saved")
    expect(page.get_by_test_id("sso-redirect-uri")).to_have_text(
        f"{people_live.origin}/auth/oidc/callback"
    )
    expect(page.get_by_test_id("sso-signin-link")).to_have_text(
        f"{people_live.origin}/ui/#/signin?org={org.id}"
    )
    with people_live.client(org.admin_token) as api:
        stored = api.get("/organization/sso").json()
    assert stored["Issuer"] == idp.issuer
    assert stored["AdminGroups"] == ["questline-admins", "trainers"]
    assert stored["ClientSecretSet"] is True
    assert "kc-secret" not in str(stored)

    # Read back: the secret is never shown, and saving without it keeps it.
    page.reload()
    expect(page.get_by_test_id("sso-issuer")).to_have_value(idp.issuer)
    expect(page.get_by_test_id("sso-client-secret")).to_have_value("")
    expect(page.get_by_test_id("sso-client-secret")).to_have_attribute(
        "placeholder", "Stored: leave empty to keep it"
    )
    check_accessibility(page, "the single sign-on settings")

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_test_id("sso-remove").click()
    expect(page.locator("#notice")).to_contain_text("Single sign-on removed")
    expect(page.get_by_test_id("sso-remove")).to_be_hidden()
    with people_live.client(org.admin_token) as api:
        assert api.get("/organization/sso").status_code == 404


def test_an_admin_invites_members_and_they_sign_in_from_the_mail(
    people_pages: Pages, people_live: LiveServer, org: SeededOrg, mailbox: Mailbox
) -> None:
    page = sign_in_as_admin(people_pages, people_live, org)
    team = org.teams["Foxes"]
    visit(page, people_live, f"/team/{team}", TEAM_READY)
    before = len(mailbox.messages())
    page.get_by_test_id("add-member-email").fill("grace@example.org")
    page.get_by_test_id("add-member-given-name").fill("Grace")
    page.get_by_test_id("add-member-invite").check()
    page.get_by_test_id("add-member-submit").click()
    expect(page.locator("#notice")).to_contain_text("Grace added to Foxes and invited by e-mail")
    invitation = mail_to(mailbox, "grace@example.org", before)
    assert "Grace" in invitation.text
    follow_link_signed_in(people_pages, invitation, "grace@example.org")

    # Added without an invitation, then invited from the Members page.
    with people_live.client(org.admin_token) as api:
        added = api.post(
            f"/team/{team}/members", json={"email": "alan@example.org", "givenName": "Alan"}
        )
        assert added.status_code == 201, added.text
    visit(page, people_live, "/members", MEMBERS_READY)
    row = page.locator("tr[data-testid=org-member-row]", has_text="alan@example.org")
    before = len(mailbox.messages())
    row.get_by_test_id("invite-member").click()
    expect(page.locator("#notice")).to_contain_text("Invitation e-mailed to Alan")
    follow_link_signed_in(
        people_pages, mail_to(mailbox, "alan@example.org", before), "alan@example.org"
    )


def test_a_person_asks_for_a_sign_in_link_on_the_sign_in_page(
    people_pages: Pages, people_live: LiveServer, org: SeededOrg, mailbox: Mailbox
) -> None:
    with people_live.client(org.admin_token) as api:
        added = api.post(
            f"/team/{org.teams['Owls']}/members",
            json={"email": "ada@example.org", "givenName": "Ada"},
        )
        assert added.status_code == 201, added.text
    people_pages.guard.allow_console(r"status of 404")  # the organization has no SSO
    context: BrowserContext = people_pages.new_context()
    page = people_pages.new_tab(context)
    page.goto(f"{people_live.origin}/ui/#/signin?org={org.id}")  # the link an admin hands out
    form = page.get_by_test_id("email-link-form")
    expect(form).to_be_visible()
    expect(page.get_by_test_id("email-link-org")).to_be_hidden()  # taken from the link
    check_accessibility(page, "the sign-in page")

    before = len(mailbox.messages())
    page.get_by_test_id("email-link-email").fill("ada@example.org")
    page.get_by_test_id("email-link-button").click()
    expect(page.locator("#notice")).to_contain_text("a sign-in link is on its way")
    mail = mail_to(mailbox, "ada@example.org", before)
    follow_link_signed_in(people_pages, mail, "ada@example.org")

    # Someone who is no member sees the same answer (no membership oracle).
    page.get_by_test_id("email-link-email").fill("stranger@example.org")
    page.get_by_test_id("email-link-button").click()
    expect(page.locator("#notice")).to_contain_text("If stranger@example.org belongs")

    # Without the organization in the link, the page asks for it.
    asking = people_pages.new_tab(context)
    asking.goto(f"{people_live.origin}/ui/#/signin")
    expect(asking.get_by_test_id("email-link-org")).to_be_visible()

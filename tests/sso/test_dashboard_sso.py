"""The dashboard's single sign-on in Chromium: a live Questline (the real CLI, a real
port) and the test provider, both on loopback, a person clicking through both.

The provider (``localhost``) and Questline (``127.0.0.1``) are different sites, as in
production: the login cookie must survive the provider's cross-site redirect back, and
the session cookie (SameSite=Strict) must reach the dashboard's own requests after it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect, sync_playwright

from questline.web.identity import Role
from tests.dashboard.browser import (
    CHROMIUM_ARGS,
    TIMEOUT_MS,
    check_accessibility,
    chromium_path,
    screenshot,
)
from tests.dashboard.live import LiveServer, live_server
from tests.sso.provider import QUIET, Provider, running_provider
from tests.support.system_packages import CHROMIUM, missing_reason

pytestmark = QUIET

ADA = {
    "email": "ada@example.org",
    "email_verified": True,
    "given_name": "Ada",
    "groups": ["questline-admins"],
}


@pytest.fixture(scope="module")
def idp() -> Iterator[Provider]:
    with running_provider() as running:
        yield running


@pytest.fixture(scope="module")
def sso_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A live server that accepts the plain-http, loopback test provider (its ``.env``:
    the server runs in its data directory)."""
    data_dir: Path = tmp_path_factory.mktemp("sso-e2e")
    (data_dir / ".env").write_text(
        "QUESTLINE_OIDC_ALLOW_HTTP=true\nQUESTLINE_OIDC_ALLOW_PRIVATE_ISSUERS=true\n"
        "QUESTLINE_OIDC_HTTP_TIMEOUT_SECONDS=60\n"
    )
    with live_server(data_dir) as running:
        yield running


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    path = chromium_path()
    if path is None:
        pytest.skip(missing_reason(CHROMIUM) or "Chromium not found")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(path), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


class Watch:
    """Uncaught page errors and requests beyond Questline and the provider fail the test."""

    def __init__(self, allowed_origins: tuple[str, ...]) -> None:
        self.allowed = allowed_origins
        self.problems: list[str] = []

    def route(self, route: Route) -> None:
        url = route.request.url
        if url.startswith(self.allowed):
            route.continue_()
        else:
            route.abort("blockedbyclient")  # the provider's page links a CDN stylesheet

    def open(self, context: BrowserContext) -> Page:
        page = context.new_page()
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        return page


@pytest.fixture
def browse(
    chromium: Browser, sso_live: LiveServer, idp: Provider
) -> Iterator[tuple[Watch, BrowserContext]]:
    sso_live.ready()
    watch = Watch((sso_live.origin + "/", idp.issuer + "/"))
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    context.set_default_timeout(TIMEOUT_MS)
    context.route(re.compile(".*"), watch.route)
    try:
        yield watch, context
    finally:
        context.close()
    assert not watch.problems, watch.problems


def _organization_with_sso(live: LiveServer, idp: Provider, **fields: object) -> uuid.UUID:
    org_id = uuid.uuid4()
    token = live.tokens.mint(role=Role.ADMIN, org_id=org_id, subject="admin")
    body = {
        "Issuer": idp.issuer,
        "ClientId": "questline",
        "ClientSecret": "kc-secret",
        "AdminGroups": ["questline-admins"],
        **fields,
    }
    with live.client(token) as client:
        response = client.put("/organization/sso", json=body)
    assert response.status_code == 201, response.text
    return org_id


def _authorize_at_provider(page: Page, idp: Provider, sub: str) -> None:
    page.wait_for_url(f"{idp.issuer}/oauth2/authorize?**")
    page.fill("input[name=sub]", sub)
    page.get_by_role("button", name="Authorize").click()


def test_a_person_signs_in_with_the_organization_and_out_again(
    browse: tuple[Watch, BrowserContext], sso_live: LiveServer, idp: Provider
) -> None:
    watch, context = browse
    org_id = _organization_with_sso(sso_live, idp)
    idp.set_user("ada", **ADA)
    page = watch.open(context)
    page.goto(f"{sso_live.origin}/ui/#/signin?org={org_id}")
    button = page.get_by_test_id("sso-button")
    expect(button).to_have_text("Sign in with your organization")
    screenshot(page, "sso-signin")
    check_accessibility(page, "the sign-in page with single sign-on")
    button.click()
    _authorize_at_provider(page, idp, "ada")

    page.wait_for_url(f"{sso_live.origin}/ui/**")
    expect(page.get_by_test_id("session-user")).to_contain_text("ada@example.org")
    expect(page.get_by_test_id("session-role")).to_have_text("admin")
    expect(page.locator("#view")).to_have_attribute("data-route", "leaderboard")

    # An admin sees (and may change) the settings; the secret is never shown.
    page.goto(f"{sso_live.origin}/ui/#/sso")
    expect(page.get_by_test_id("sso-redirect-uri")).to_have_text(
        f"{sso_live.origin}/auth/oidc/callback"
    )
    expect(page.get_by_test_id("sso-issuer")).to_have_value(idp.issuer)
    expect(page.get_by_test_id("sso-client-secret")).to_have_value("")
    page.get_by_test_id("sso-domains").fill("example.org")
    page.get_by_test_id("sso-save").click()
    expect(page.locator("#notice")).to_contain_text("Single sign-on saved")
    screenshot(page, "sso-settings")
    check_accessibility(page, "the single sign-on settings")

    page.get_by_test_id("signout-button").click()
    offer = page.get_by_test_id("provider-logout-link")
    expect(offer).to_be_visible()
    href = offer.get_attribute("href") or ""
    assert href.startswith(f"{idp.issuer}/oauth2/end_session?")
    assert "client_id=questline" in href
    # Signed out of Questline: the session is over (the page asks again).
    expect(page.get_by_test_id("signin-form")).to_be_visible()
    assert "questline_session" not in {c["name"] for c in context.cookies()}


def test_a_refused_login_shows_why_on_the_sign_in_page(
    browse: tuple[Watch, BrowserContext], sso_live: LiveServer, idp: Provider
) -> None:
    watch, context = browse
    org_id = _organization_with_sso(sso_live, idp)
    idp.set_user("bob", email="bob@example.org", email_verified=False)
    page = watch.open(context)
    page.goto(f"{sso_live.origin}/auth/oidc/{org_id}/login")
    _authorize_at_provider(page, idp, "bob")
    page.wait_for_url(f"{sso_live.origin}/ui/#/signin**")
    expect(page.get_by_test_id("error-summary")).to_contain_text("e-mail address is not verified")
    # The code is taken out of the address bar; the organization stays.
    assert "sso-error" not in page.url
    expect(page.get_by_test_id("sso-button")).to_be_visible()
    assert "questline_session" not in {c["name"] for c in context.cookies()}

    page.get_by_test_id("sso-button").click()
    page.wait_for_url(f"{idp.issuer}/oauth2/authorize?**")
    page.get_by_role("button", name="Deny").click()
    expect(page.get_by_test_id("error-summary")).to_contain_text("did not sign you in")


def test_the_sign_in_page_asks_for_the_organization(
    browse: tuple[Watch, BrowserContext], sso_live: LiveServer, idp: Provider
) -> None:
    watch, context = browse
    org_id = _organization_with_sso(sso_live, idp)
    idp.set_user("lin", **{**ADA, "email": "lin@example.org", "groups": []})
    page = watch.open(context)
    page.goto(f"{sso_live.origin}/ui/")
    field = page.get_by_test_id("sso-org-input")
    field.fill(str(uuid.uuid4()))  # an organization without single sign-on
    page.get_by_test_id("sso-continue").click()
    expect(page.locator("#sso-org-help")).to_contain_text("does not offer single sign-on")
    field.fill(str(org_id))
    page.get_by_test_id("sso-continue").click()
    _authorize_at_provider(page, idp, "lin")
    expect(page.get_by_test_id("session-role")).to_have_text("member")

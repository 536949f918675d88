"""End-to-end: an admin runs a season from the dashboard (issue 28) in Chromium against
a live server — creates it (a wrong window is refused with the service's message and
creates nothing), sees it frozen, reveals it and deletes it; each step checked through
the API."""

from __future__ import annotations

import datetime as dt

import pytest
from playwright.sync_api import expect

from tests.dashboard.browser import Pages
from tests.dashboard.live import LiveServer
from tests.dashboard.seed import SeededOrg
from tests.dashboard.test_admin_flows import sign_in
from tests.dashboard.test_e2e import visit

# What the browser draws and sends does not depend on the database: the API requests
# these flows make are checked on every backend by their own tests; the flows run on
# one (tests/conftest.py, ONE_BACKEND). The learners' flows run on every backend.
pytestmark = [pytest.mark.slow, pytest.mark.one_backend]

SEASONS_READY = "#seasons-table[data-loaded]"
ROWS = "tr[data-testid=season-row]"


def local(value: dt.datetime) -> str:
    """A ``datetime-local`` input's value (the test browser runs in UTC)."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M")


def test_create_reveal_and_delete_a_season(pages: Pages, live: LiveServer, org: SeededOrg) -> None:
    page = pages.open()
    pages.guard.allow_console(r"status of 422")
    sign_in(page, live, org)
    visit(page, live, "/seasons", SEASONS_READY)
    expect(page.locator(ROWS)).to_have_count(0)
    now = dt.datetime.now(dt.UTC)

    # Ends before it starts: the service's 422, shown; nothing created.
    page.locator("#season-name").fill("Backwards")
    page.locator("#season-starts").fill(local(now))
    page.locator("#season-ends").fill(local(now - dt.timedelta(days=1)))
    page.locator("[data-testid=season-create]").click()
    expect(page.locator("#error")).to_be_visible()
    with live.client(org.admin_token) as api:
        assert api.get("/season").json() == []

    page.locator("#season-name").fill("Spring cup")
    page.locator("#season-starts").fill(local(now - dt.timedelta(hours=2)))
    page.locator("#season-freezes").fill(local(now - dt.timedelta(hours=1)))
    page.locator("#season-ends").fill(local(now + dt.timedelta(days=1)))
    page.locator("[data-testid=season-create]").click()
    expect(page.locator("#notice")).to_contain_text("Spring cup")
    row = page.locator(ROWS)
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-phase", "Frozen")
    with live.client(org.admin_token) as api:
        [season] = api.get("/season").json()
    assert season["Name"] == "Spring cup"
    assert season["FreezesAt"] is not None
    assert season["RevealedAt"] is None
    assert dt.datetime.fromisoformat(season["EndsAt"]) > now

    row.locator("[data-testid=season-reveal]").click()
    expect(page.locator("#notice")).to_contain_text("revealed")
    expect(row).not_to_have_attribute("data-phase", "Frozen")
    with live.client(org.admin_token) as api:
        assert api.get(f"/season/{season['Id']}").json()["RevealedAt"] is not None

    page.once("dialog", lambda dialog: dialog.accept())
    row.locator("[data-testid=season-delete]").click()
    expect(page.locator("#notice")).to_contain_text("deleted")
    expect(page.locator(ROWS)).to_have_count(0)
    with live.client(org.admin_token) as api:
        assert api.get(f"/season/{season['Id']}").status_code == 404

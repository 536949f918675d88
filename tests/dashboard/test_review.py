"""End-to-end: an admin reviews submitted work from the dashboard's Review page in
Chromium against a live server — the queue oldest first with the submitter and the
link, a rejection without a comment refused with the service's message, a rejection
and an approval with comments, each checked through the API; axe finds no serious
violation on the page."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from questline.web.identity import Role
from tests.dashboard.browser import Pages, check_accessibility
from tests.dashboard.live import LiveServer
from tests.dashboard.seed import SeededOrg
from tests.dashboard.test_admin_flows import sign_in
from tests.dashboard.test_e2e import LEADERBOARD_READY, visit
from tests.factories import unique

pytestmark = pytest.mark.slow

READY = "#review-table[data-loaded]"
ROWS = "tr[data-testid=review-row]"


def submissions(live: LiveServer, org: SeededOrg) -> tuple[list[dict[str, Any]], list[str]]:
    """A discipline with two review tasks, and Ada's then Bo's work for them."""
    with live.client(org.admin_token) as api:
        tasks = [
            {"Title": title, "Points": 15, "Check": {"Kind": "Review"}}
            for title in ("Film the robot", "Write the report")
        ]
        made = api.post(
            "/discipline",
            json={
                "Title": unique("Review e2e"),
                "Description": "x",
                "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": tasks}]}],
            },
        )
        assert made.status_code == 201, made.text
        task_ids = [t["Id"] for t in made.json()["Levels"][0]["Quests"][0]["Tasks"]]
        people = []
        for name, team in (("Ada", "Owls"), ("Bo", "Foxes")):
            email = f"{unique(name.lower())}@example.org"
            added = api.post(
                f"/team/{org.teams[team]}/members", json={"email": email, "givenName": name}
            )
            assert added.status_code == 201, added.text
            people.append((email, team))
    work = []
    for (email, team), task, body in zip(
        people,
        task_ids,
        ({"Url": "https://example.org/video/1"}, {"Text": "Report:\nall parts work."}),
        strict=True,
    ):
        token = live.tokens.mint(role=Role.MEMBER, org_id=org.id, subject=email, email=email)
        with live.client(token) as member:
            sent = member.post(
                f"/team/{org.teams[team]}/submissions", json={"TaskId": task, **body}
            )
            assert sent.status_code == 201, sent.text
            work.append(sent.json())
    return work, task_ids


def test_an_admin_reviews_the_queue(pages: Pages, live: LiveServer, org: SeededOrg) -> None:
    work, _ = submissions(live, org)
    page = pages.open()
    pages.guard.allow_console(r"status of 422")
    sign_in(page, live, org)
    visit(page, live, "/review", READY)
    rows = page.locator(ROWS)
    expect(rows).to_have_count(2)
    first, second = rows.nth(0), rows.nth(1)
    expect(first).to_have_attribute("data-submission-id", work[0]["Id"])
    expect(first.locator("[data-testid=review-submitter]")).to_contain_text("Ada")
    link = first.locator("[data-testid=review-link]")
    expect(link).to_have_attribute("href", "https://example.org/video/1")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(second.locator("[data-testid=review-text]")).to_have_text("Report:\nall parts work.")
    check_accessibility(page, "review")

    # A rejection needs a comment: the service's 422 is shown, nothing is decided.
    first.locator("[data-testid=review-reject]").click()
    expect(page.locator("#error")).to_be_visible()
    with live.client(org.admin_token) as api:
        assert api.get(f"/submission/{work[0]['Id']}").json()["State"] == "Pending"

    first.locator("[data-testid=review-comment-input]").fill("The video is private.")
    first.locator("[data-testid=review-reject]").click()
    expect(page.locator("#notice")).to_contain_text("Sent back")
    expect(rows.nth(0)).to_have_attribute("data-state", "Rejected")
    expect(rows.nth(0).locator("[data-testid=review-comment]")).to_have_text(
        "The video is private."
    )

    rows.nth(1).locator("[data-testid=review-comment-input]").fill("Clear report.")
    rows.nth(1).locator("[data-testid=review-approve]").click()
    expect(page.locator("#notice")).to_contain_text("Approved")
    expect(rows.nth(1)).to_have_attribute("data-state", "Approved")
    with live.client(org.admin_token) as api:
        rejected = api.get(f"/submission/{work[0]['Id']}").json()
        approved = api.get(f"/submission/{work[1]['Id']}").json()
        progress = api.get(f"/team/{org.teams['Foxes']}/progress/{work[1]['TaskId']}")
    assert (rejected["State"], rejected["Comment"]) == ("Rejected", "The video is private.")
    assert (approved["State"], approved["Comment"]) == ("Approved", "Clear report.")
    assert progress.status_code == 200
    assert progress.json()["MemberId"] == work[1]["MemberId"]

    # The queue (pending only) is empty now; "All" shows both decisions.
    visit(page, live, "/leaderboard", LEADERBOARD_READY)
    visit(page, live, "/review", READY)
    expect(page.locator(ROWS)).to_have_count(0)
    page.locator("#review-state").select_option("")
    expect(page.locator(ROWS)).to_have_count(2)
    check_accessibility(page, "review (decided)")


def test_members_do_not_get_the_review_page(pages: Pages, live: LiveServer, org: SeededOrg) -> None:
    page = pages.open()
    sign_in(page, live, org, Role.MEMBER)
    expect(page.locator("a[data-route=review]")).to_be_hidden()

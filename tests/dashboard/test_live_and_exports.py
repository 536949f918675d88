"""End-to-end: the live leaderboard (Server-Sent Events), a team's neighbours on the
leaderboard and the "Download CSV" buttons (issue 17d), driven in Chromium against a
live server."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, Request, expect

from tests.dashboard.browser import Pages
from tests.dashboard.live import LiveServer
from tests.dashboard.seed import ADMIN_TEAM, RANKED, SeededOrg
from tests.dashboard.test_admin_flows import sign_in
from tests.dashboard.test_e2e import TEAM_READY, TEAMS_READY, visit

# What the browser draws and sends does not depend on the database: the API requests
# these flows make are checked on every backend by their own tests; the flows run on
# one (tests/conftest.py, ONE_BACKEND). The learners' flows run on every backend.
pytestmark = [pytest.mark.slow, pytest.mark.one_backend]

LIVE = "#leaderboard-table[data-live]"


def rows(page: Page) -> list[str | None]:
    locator = page.locator("tr[data-testid=leaderboard-row]")
    return [locator.nth(i).get_attribute("data-team-id") for i in range(locator.count())]


def test_the_leaderboard_follows_the_stream_without_reloading(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    sign_in(page, live, org)
    page.locator(LIVE).wait_for(state="attached")
    assert rows(page) == org.ranked_by_score
    polled: list[str] = []

    def on_request(request: Request) -> None:
        if "/leaderboard" in request.url and "/leaderboard/stream" not in request.url:
            polled.append(request.url)

    page.on("request", on_request)
    page.evaluate("window.__notReloaded = true")

    # Wolves (0 points) complete the 50-point task: 50 > Bears' 30, so third.
    with live.client(org.admin_token) as api:
        done = api.post(f"/team/{org.teams['Wolves']}/progress", json={"TaskId": org.task_ids[4]})
        assert done.status_code == 201, done.text
    wolves = page.locator(f"tr[data-testid=leaderboard-row][data-team-id='{org.teams['Wolves']}']")
    expect(wolves).to_have_attribute("data-rank", "3")
    expect(wolves.locator("[data-testid=leaderboard-score]")).to_have_text("50")
    assert page.evaluate("window.__notReloaded") is True
    assert polled == []  # the stream brought it, not a poll
    expect(page.locator("#leaderboard-updated")).to_contain_text("live updates")

    # Leaving the page closes the stream: the polling loop does not start either.
    visit(page, live, "/teams", TEAMS_READY)
    assert page.locator(LIVE).count() == 0


def test_the_leaderboard_polls_when_the_stream_is_refused(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    pages.guard.allow_console(r"status of 503")
    page = pages.open()
    page.route("**/leaderboard/stream*", lambda route: route.fulfill(status=503, body=""))
    sign_in(page, live, org)
    expect(page.locator("#leaderboard-updated")).to_contain_text("refreshes every 5 s")
    assert page.locator(LIVE).count() == 0
    assert rows(page) == org.ranked_by_score


def test_a_team_page_shows_its_neighbours_or_why_it_is_not_ranked(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    sign_in(page, live, org)
    foxes = org.teams["Foxes"]
    visit(page, live, f"/team/{foxes}", TEAM_READY)
    items = page.locator("#neighbours-list li[data-testid=neighbour]")
    expect(items).to_have_count(len(RANKED))  # 5 asked, only 4 ranked teams
    assert [items.nth(i).get_attribute("data-team-id") for i in range(4)] == org.ranked_by_score
    me = page.locator(f"#neighbours-list li[data-team-id='{foxes}']")
    expect(me).to_have_attribute("aria-current", "true")
    expect(me).to_have_attribute("data-rank", "2")
    expect(me).to_have_class("mine")
    expect(me).to_contain_text("Foxes")

    visit(page, live, f"/team/{org.teams[ADMIN_TEAM]}", TEAM_READY)
    expect(page.locator("[data-testid=neighbours-unranked]")).to_contain_text("not ranked")
    expect(page.locator("#neighbours-list")).to_have_count(0)
    expect(page.locator("#error")).to_be_hidden()


def download(page: Page, button: str) -> tuple[str, str]:
    with page.expect_download() as info:
        page.locator(button).click()
    saved = info.value
    path = saved.path()
    assert path is not None
    return saved.suggested_filename, Path(path).read_text(encoding="utf-8")


def test_csv_downloads_of_the_leaderboard_teams_and_progress(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    sign_in(page, live, org)
    name, text = download(page, "#leaderboard-csv")
    assert name == "leaderboard.csv"
    lines = text.splitlines()
    assert "Rank" in lines[0]
    assert "Name" in lines[0]
    assert len(lines) == 1 + len(RANKED)
    for team in RANKED:
        assert team in text
    assert ADMIN_TEAM not in text  # the admin team is not ranked

    visit(page, live, "/teams", TEAMS_READY)
    name, text = download(page, "#teams-csv")
    assert name == "teams.csv"
    assert "Name" in text.splitlines()[0]
    for team in [*RANKED, ADMIN_TEAM]:
        assert team in text

    owls = org.teams["Owls"]
    visit(page, live, f"/team/{owls}", TEAM_READY)
    name, text = download(page, "#team-progress-csv")
    assert name.endswith(".csv")
    lines = text.splitlines()
    assert "TaskId" in lines[0]
    assert len(lines) == 1 + RANKED["Owls"]
    for task_id in org.task_ids[: RANKED["Owls"]]:
        assert task_id in text

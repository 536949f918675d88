"""End-to-end: the leaderboard's competition switches (issue 28), driven in Chromium
against a live server — the bracket switch offers the organization's tags (each once,
whatever its case) and ranks the bracket's teams 1, 2, …; the season picker lists the
organization's seasons and ranks by the season's window; the two combine, and a
member sees a frozen season as at its freeze."""

from __future__ import annotations

import datetime as dt

import pytest
from playwright.sync_api import Page, expect

from questline.web.identity import Role
from tests.dashboard.browser import Pages
from tests.dashboard.live import LiveServer
from tests.dashboard.seed import SeededOrg
from tests.dashboard.test_admin_flows import sign_in

# What the browser draws and sends does not depend on the database: the API requests
# these flows make are checked on every backend by their own tests; the flows run on
# one (tests/conftest.py, ONE_BACKEND). The learners' flows run on every backend.
pytestmark = [pytest.mark.slow, pytest.mark.one_backend]

ROWS = "tr[data-testid=leaderboard-row]"
SEASON = "#leaderboard-season"
BRACKET = "#leaderboard-bracket"


def iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def expect_ranked(page: Page, org: SeededOrg, expected: list[tuple[str, int]]) -> None:
    """The table shows these teams with these scores, ranked 1, 2, …"""
    rows = page.locator(ROWS)
    expect(rows).to_have_count(len(expected))
    for index, (name, score) in enumerate(expected):
        row = rows.nth(index)
        expect(row).to_have_attribute("data-team-id", org.teams[name])
        expect(row).to_have_attribute("data-rank", str(index + 1))
        expect(row.locator("[data-testid=leaderboard-score]")).to_have_text(str(score))


def prepare(live: LiveServer, org: SeededOrg) -> dict[str, str]:
    """Tags for two brackets and two seasons: ``Late`` counts the completions from 12
    hours after the seed's first (Owls 30 + 40, Foxes 30), frozen now for members;
    ``Next`` has not started."""
    with live.client(org.admin_token) as api:
        for name, tags in (("Owls", ["e2e", "north"]), ("Bears", ["North"])):
            changed = api.patch(f"/team/{org.teams[name]}", json={"Tags": tags})
            assert changed.status_code == 200, changed.text
        created = {}
        now = dt.datetime.now(dt.UTC)
        for name, starts, freezes, ends in (
            ("Late", org.started_at + dt.timedelta(hours=12), now, now + dt.timedelta(days=1)),
            ("Next", now + dt.timedelta(days=2), None, now + dt.timedelta(days=3)),
        ):
            body = {"Name": name, "StartsAt": iso(starts), "EndsAt": iso(ends)}
            if freezes is not None:
                body["FreezesAt"] = iso(freezes)
            response = api.post("/season", json=body)
            assert response.status_code == 201, response.text
            created[name] = response.json()["Id"]
    return created


def test_brackets_and_seasons_switch_the_leaderboard(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    seasons = prepare(live, org)
    page = pages.open()
    sign_in(page, live, org)
    expect_ranked(page, org, [("Owls", 100), ("Foxes", 60), ("Bears", 30), ("Wolves", 0)])

    bracket = page.locator(BRACKET)
    # Bears (listed first: teams come by name) spell it "North", Owls "north": offered
    # once, as the first team spells it.
    expect(bracket.locator("option")).to_have_text(["All teams", "e2e", "North"])
    bracket.select_option("North")
    expect_ranked(page, org, [("Owls", 100), ("Bears", 30)])

    season = page.locator(SEASON)
    expect(season.locator("option")).to_have_text(["All time", "Next (upcoming)", "Late (frozen)"])
    season.select_option(seasons["Late"])
    expect_ranked(page, org, [("Owls", 70), ("Bears", 0)])

    bracket.select_option("")
    expect_ranked(page, org, [("Owls", 70), ("Foxes", 30), ("Bears", 0), ("Wolves", 0)])

    # Recorded during the freeze: the admin's live standings move at once (the stream),
    # a member's stay as at the freeze.
    with live.client(org.admin_token) as api:
        done = api.post(f"/team/{org.teams['Wolves']}/progress", json={"TaskId": org.task_ids[4]})
        assert done.status_code == 201, done.text
    expect_ranked(page, org, [("Owls", 70), ("Wolves", 50), ("Foxes", 30), ("Bears", 0)])

    member = pages.new_tab(pages.new_context())
    sign_in(member, live, org, Role.MEMBER)
    # The choice is the page's own: a new sign-in starts from the overall standings.
    expect_ranked(member, org, [("Owls", 100), ("Foxes", 60), ("Wolves", 50), ("Bears", 30)])
    member.locator(SEASON).select_option(seasons["Late"])
    expect_ranked(member, org, [("Owls", 70), ("Foxes", 30), ("Bears", 0), ("Wolves", 0)])

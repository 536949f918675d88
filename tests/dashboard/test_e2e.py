"""End-to-end: the dashboard in headless Chromium against a live server (issue 8).

Every test gets its own organization, seeded through the HTTP API, and fails if a page
logs a console error, throws, or requests anything outside the service (see the
``pages`` fixture). Waits are on the DOM hooks of frontend/README.md, never on sleeps.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from questline.demo import loader as demo
from tests.dashboard.browser import (
    DOCS_SCREENSHOTS,
    Guard,
    Pages,
    check_accessibility,
    screenshot,
)
from tests.dashboard.live import LiveServer, live_server, run_cli, server_env
from tests.dashboard.seed import ADMIN_TEAM, SeededOrg
from tests.support.postgres import free_port

# What the browser draws and sends does not depend on the database: the API requests
# these flows make are checked on every backend by their own tests; the flows run on
# one (tests/conftest.py, ONE_BACKEND). The learners' flows run on every backend.
pytestmark = pytest.mark.one_backend

LEADERBOARD_READY = '#view[data-route="leaderboard"] #leaderboard-table[data-loaded]'
GRAPH_READY = '#view[data-route="graph"] #graph-chart[data-loaded]'
TEAMS_READY = '#view[data-route="teams"] #teams-table[data-loaded]'
TEAM_READY = '#view[data-route="team"] #team-progress[data-loaded]'
DISCIPLINES_READY = '#view[data-route="disciplines"] #disciplines-table[data-loaded]'
DISCIPLINE_READY = '#view[data-route="discipline"] #discipline-tree'
MEMBERS_READY = '#view[data-route="members"] #org-members-table[data-loaded]'
ONBOARDING_READY = '#view[data-route="onboarding"] #onboarding-form'
EDITOR_READY = '#view[data-route="discipline-edit"] #discipline-editor[data-loaded]'
NEW_DISCIPLINE_READY = '#view[data-route="discipline-new"] #discipline-editor[data-loaded]'


def visit(page: Page, live: LiveServer, route: str, ready: str) -> None:
    """Open a dashboard route (a hash change: the page is not reloaded) and wait for it."""
    if not page.url.startswith(f"{live.origin}/ui/"):
        page.goto(f"{live.origin}/ui/#{route}")
    else:
        page.evaluate("route => { window.location.hash = route; }", route)
    page.locator(ready).wait_for(state="attached")


def sign_in_by_link(page: Page, live: LiveServer, token: str) -> None:
    page.goto(f"{live.origin}/ui/#token={token}")
    page.locator(LEADERBOARD_READY).wait_for(state="attached")


def leaderboard_ids(page: Page) -> list[str]:
    rows = page.locator("tr[data-testid=leaderboard-row]")
    return [str(rows.nth(i).get_attribute("data-team-id")) for i in range(rows.count())]


def test_sign_in_with_a_pasted_token_shows_the_ranked_teams(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    page.goto(f"{live.origin}/ui/")
    expect(page.locator("#signin-form")).to_be_visible()

    page.locator("#token-input").fill(f"Bearer {org.admin_token}\n")
    page.locator("#signin-button").click()
    page.locator(LEADERBOARD_READY).wait_for(state="attached")

    assert leaderboard_ids(page) == org.ranked_by_score
    rows = page.locator("tr[data-testid=leaderboard-row]")
    expect(rows.locator("[data-testid=leaderboard-score]")).to_have_text(["100", "60", "30", "0"])
    assert [rows.nth(i).get_attribute("data-rank") for i in range(4)] == ["1", "2", "3", "4"]
    assert org.teams[ADMIN_TEAM] not in leaderboard_ids(page)
    expect(page.locator("#leaderboard-table")).not_to_contain_text(ADMIN_TEAM)
    expect(page.locator("[data-testid=session-role]")).to_have_text("admin")
    # The token was exchanged once for the session cookie; the page keeps no secret.
    stored = page.evaluate("JSON.stringify([sessionStorage, localStorage])")
    assert org.admin_token not in stored
    [cookie] = page.context.cookies()
    assert cookie["name"] == "questline_session"
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"


def test_the_guard_catches_what_a_page_must_not_do(pages: Pages, live: LiveServer) -> None:
    """The guard that every test relies on is not vacuous with this browser."""
    page = pages.open()
    page.goto(f"{live.origin}/ui/")
    expect(page.locator("#signin-form")).to_be_visible()
    with page.expect_console_message(lambda m: m.text == "deliberate"):
        page.evaluate("console.error('deliberate')")
    with page.expect_event("pageerror"):
        page.evaluate("setTimeout(() => { throw new Error('thrown on purpose'); }, 0)")
    page.goto("about:blank")  # no Content-Security-Policy here to stop the request first
    with page.expect_request("https://example.org/beacon"):
        page.evaluate("fetch('https://example.org/beacon').catch(() => null)")
    found = "\n".join(pages.guard.problems)
    assert "console error: deliberate" in found
    assert "page error: thrown on purpose" in found
    assert "request outside the service: GET https://example.org/beacon" in found
    pages.guard.problems.clear()


def test_a_token_link_signs_in_and_leaves_the_url(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    sign_in_by_link(page, live, org.member_token)

    assert page.url == f"{live.origin}/ui/#/leaderboard"
    assert leaderboard_ids(page) == org.ranked_by_score
    expect(page.locator("[data-testid=session-role]")).to_have_text("member")
    # A member sees the teams but none of the admin forms.
    visit(page, live, f"/team/{org.teams['Owls']}", TEAM_READY)
    expect(page.locator("#admin-flag-switch")).to_have_count(0)
    visit(page, live, "/teams", TEAMS_READY)
    expect(page.locator("#create-team-form")).to_have_count(0)


def test_an_invalid_token_is_refused_with_a_message(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    pages.guard.allow_console(r"status of 401")
    page.goto(f"{live.origin}/ui/")
    forged = org.admin_token[:-4] + ("AAAA" if not org.admin_token.endswith("AAAA") else "BBBB")
    page.locator("#token-input").fill(forged)
    page.locator("#signin-button").click()

    expect(page.locator("#error")).to_be_visible()
    expect(page.locator("#error")).to_contain_text("not valid")
    expect(page.locator("#token-input")).to_have_attribute("aria-invalid", "true")
    assert page.context.cookies() == []


def test_the_admin_switch_takes_a_team_off_the_leaderboard_and_graph(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    foxes = org.teams["Foxes"]
    sign_in_by_link(page, live, org.admin_token)
    visit(page, live, "/graph", GRAPH_READY)
    chart = page.locator("#graph-chart")
    expect(chart).to_have_attribute("data-team-ids", ",".join(org.ranked_by_score))
    expect(page.locator("li[data-testid=graph-legend-item]")).to_have_count(4)

    visit(page, live, f"/team/{foxes}", TEAM_READY)
    switch = page.locator("#admin-flag-switch")
    expect(switch).to_have_attribute("aria-pressed", "false")
    switch.click()
    expect(switch).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#notice")).to_contain_text("is now an admin team")
    expect(page.locator("[data-testid=team-rank]")).to_have_text("Not ranked (admin team)")
    expect(page.locator("[data-testid=team-admin-badge]")).to_be_visible()

    without = [t for t in org.ranked_by_score if t != foxes]
    visit(page, live, "/leaderboard", LEADERBOARD_READY)
    assert leaderboard_ids(page) == without
    visit(page, live, "/graph", GRAPH_READY)
    expect(chart).to_have_attribute("data-team-ids", ",".join(without))
    expect(
        page.locator(f"li[data-testid=graph-legend-item][data-team-id='{foxes}']")
    ).to_have_count(0)
    with live.client(org.admin_token) as api:
        team = api.get(f"/team/{foxes}").json()
    assert team["IsAdminTeam"] is True

    # The same switch brings it back, with its whole history.
    visit(page, live, f"/team/{foxes}", TEAM_READY)
    switch.click()
    expect(switch).to_have_attribute("aria-pressed", "false")
    expect(page.locator("[data-testid=team-rank]")).to_have_text("#2")
    visit(page, live, "/graph", GRAPH_READY)
    expect(chart).to_have_attribute("data-team-ids", ",".join(org.ranked_by_score))


def test_graph_window_and_discipline_filters_reach_the_api(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    sign_in_by_link(page, live, org.member_token)
    discipline = org.discipline["Id"]

    # The leaderboard ranked by the points earned in one discipline (its first page
    # follows the stream, opened again with the discipline).
    with page.expect_response(
        lambda r: "/leaderboard/stream?" in r.url and discipline in r.url
    ) as got:
        page.locator("#leaderboard-discipline").select_option(discipline)
    assert got.value.status == 200
    expect(
        page.locator("tr[data-testid=leaderboard-row] [data-testid=leaderboard-score]")
    ).to_have_text(["100", "60", "30", "0"])

    # A window on the graph: datetime-local inputs (the browser runs in UTC here) become
    # RFC 3339 instants. Until started_at + 5 h, each of the first three teams had done
    # its first task only (10 points); Wolves nothing.
    visit(page, live, "/graph", GRAPH_READY)
    local = "%Y-%m-%dT%H:%M"
    page.locator("#graph-from").fill((org.started_at - dt.timedelta(hours=1)).strftime(local))
    page.locator("#graph-to").fill((org.started_at + dt.timedelta(hours=5)).strftime(local))
    with page.expect_response(lambda r: "/leaderboard/graph?" in r.url and "to=" in r.url) as got:
        page.locator("#graph-apply").click()
    assert got.value.status == 200
    expect(page.locator("#graph-updated")).to_contain_text("Window")
    legend = page.locator("li[data-testid=graph-legend-item] .muted")
    expect(legend).to_have_count(4)
    expect(legend).to_have_text(["10", "10", "10", "0"])
    expect(page.locator("#error")).to_be_hidden()

    # "From" after "To" is caught in the page, with a message, before any request.
    page.locator("#graph-from").fill((org.started_at + dt.timedelta(hours=6)).strftime(local))
    page.locator("#graph-apply").click()
    expect(page.locator("#error")).to_contain_text("before")
    page.locator("#graph-reset").click()
    expect(page.locator("#error")).to_be_hidden()
    expect(page.locator("#graph-chart")).to_have_attribute(
        "data-team-ids", ",".join(org.ranked_by_score)
    )


def test_a_team_page_shows_its_level_progress(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    sign_in_by_link(page, live, org.member_token)
    page.locator(f"tr[data-team-id='{org.teams['Bears']}'] a").click()
    page.locator(TEAM_READY).wait_for(state="attached")

    expect(page.locator("#team-name")).to_have_text("Bears")
    expect(page.locator("[data-testid=team-score]")).to_have_text("30")
    expect(page.locator("[data-testid=team-rank]")).to_have_text("#3")
    expect(page.locator("[data-testid=team-tasks-completed]")).to_have_text("2")
    basics, advanced = (level["Id"] for level in org.discipline["Levels"])
    headers, cookies = (q["Id"] for q in org.discipline["Levels"][0]["Quests"])
    bar = "[data-testid={}-progress-bar][data-{}-id='{}']"
    # Bears completed the 10- and 20-point tasks: 2 of Basics' 3 tasks, 2 of 5 in all.
    expect(page.locator(bar.format("level", "level", basics))).to_have_attribute(
        "aria-valuenow", "66"
    )
    expect(page.locator(bar.format("level", "level", advanced))).to_have_attribute(
        "aria-valuenow", "0"
    )
    expect(page.locator(bar.format("quest", "quest", headers))).to_have_attribute(
        "aria-valuenow", "100"
    )
    expect(page.locator(bar.format("quest", "quest", cookies))).to_have_attribute(
        "aria-valuenow", "0"
    )
    expect(
        page.locator(bar.format("discipline", "discipline", org.discipline["Id"]))
    ).to_have_attribute("aria-valuenow", "40")
    current = page.locator("li[data-testid=level-progress][aria-current=step]")
    expect(current).to_have_attribute("data-level-id", basics)
    # The team's own graph: one series, this team's.
    team_graph = page.locator("#team-graph-chart[data-loaded]")
    expect(team_graph).to_have_attribute("data-team-ids", org.teams["Bears"])


def test_create_a_team_and_add_a_member_through_the_forms(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    page = pages.open()
    pages.guard.allow_console(r"status of 409")
    pages.guard.allow_console(r"status of 422")
    sign_in_by_link(page, live, org.admin_token)
    visit(page, live, "/teams", TEAMS_READY)

    page.locator("#create-team-name").fill("Otters")
    page.locator("#create-team-tags").fill("river, e2e")
    page.locator("#create-team-submit").click()
    expect(page.locator("#notice")).to_have_text("Team “Otters” created.")
    with live.client(org.admin_token) as api:
        otters = next(t for t in api.get("/team").json() if t["Name"] == "Otters")
    assert otters["Tags"] == ["river", "e2e"]
    expect(page.locator(f"tr[data-testid=team-row][data-team-id='{otters['Id']}']")).to_be_visible()

    # A duplicate name (case-insensitively) is a readable message, not a dead form.
    page.locator("#create-team-name").fill("owls")
    page.locator("#create-team-submit").click()
    error = page.locator("#error")
    expect(error).to_be_visible()
    expect(error.locator("[data-testid=error-summary]")).to_have_attribute("data-status", "409")
    expect(error.locator("[data-testid=error-summary]")).to_contain_text("owls")
    screenshot(page, "teams-duplicate-error")
    with live.client(org.admin_token) as api:
        assert len(api.get("/team").json()) == 6  # nothing more was created

    page.locator(f"tr[data-team-id='{otters['Id']}'] a").click()
    page.locator(TEAM_READY).wait_for(state="attached")
    expect(page.locator("#members-table[data-loaded]")).to_contain_text("No members yet.")

    # The server rejects what the browser's own check lets through: named in the form.
    page.locator("#add-member-email").fill("ada@localhost")
    page.locator("#add-member-given-name").fill("Ada")
    page.locator("#add-member-submit").click()
    expect(error.locator("[data-testid=error-summary]")).to_have_attribute("data-status", "422")
    expect(error.locator("[data-testid=error-fields] li")).to_have_count(1)
    expect(page.locator("#add-member-email")).to_have_attribute("aria-invalid", "true")

    page.locator("#add-member-email").fill("ada@example.org")
    page.locator("#add-member-submit").click()
    expect(page.locator("#notice")).to_have_text("Ada added to Otters.")
    expect(error).to_be_hidden()
    rows = page.locator("tr[data-testid=member-row]")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("ada@example.org")
    expect(page.locator("[data-testid=team-member-count]")).to_have_text("1")


def test_the_discipline_page_shows_the_tree(pages: Pages, live: LiveServer, org: SeededOrg) -> None:
    page = pages.open()
    sign_in_by_link(page, live, org.member_token)
    visit(page, live, "/disciplines", DISCIPLINES_READY)
    row = page.locator(f"#disciplines-table tr[data-discipline-id='{org.discipline['Id']}']")
    expect(row).to_contain_text("Web security")
    expect(row.locator("td")).to_have_text(["2", "3", "5", "150"])
    row.locator("a").click()
    page.locator(DISCIPLINE_READY).wait_for(state="attached")

    tree = page.locator("#discipline-tree")
    expect(tree.locator("li[data-level-id]")).to_have_count(2)
    expect(tree.locator("li[data-quest-id]")).to_have_count(3)
    tasks = tree.locator("li[data-testid=discipline-task]")
    expect(tasks).to_have_count(5)
    points = tasks.locator(".points")
    assert [points.nth(i).get_attribute("data-points") for i in range(5)] == [
        "10",
        "20",
        "30",
        "40",
        "50",
    ]
    expect(points.first).to_have_text("10 points")
    assert [tasks.nth(i).get_attribute("data-task-id") for i in range(5)] == org.task_ids

    links = page.locator("li[data-resource-id] a")
    expect(links).to_have_count(4)
    assert [links.nth(i).get_attribute("href") for i in range(4)] == [
        "https://owasp.example.org/top10",  # the discipline's
        "https://mdn.example.org/http",  # level Basics'
        "https://example.org/hsts",  # task Send HSTS's
        "https://example.org/csp",  # quest Content security policy's
    ]
    task_link = tree.locator(f"li[data-task-id='{org.task_ids[0]}'] li[data-resource-id] a")
    expect(task_link).to_have_attribute("href", "https://example.org/hsts")
    expect(task_link).to_have_attribute("rel", re.compile("noopener"))


@pytest.mark.parametrize(
    ("width", "dark"), [("desktop", False), ("desktop", True), ("phone", False), ("phone", True)]
)
def test_every_page_renders_fits_the_screen_and_passes_axe(
    pages: Pages, live: LiveServer, org: SeededOrg, width: str, dark: bool
) -> None:
    """Every page, light and dark, desktop and phone: no sideways scrolling, and axe-core
    finds no serious or critical violation. Screenshots go to test-artifacts/ (and to
    docs/screenshots/ with QUESTLINE_SCREENSHOTS=docs)."""
    page = pages.open(width, dark=dark)
    scheme = "dark" if dark else "light"
    page.goto(f"{live.origin}/ui/")
    expect(page.locator("#signin-form")).to_be_visible()
    check_accessibility(page, f"signin ({scheme}, {width})")
    screenshot(page, f"signin-{scheme}")
    page.goto(live.signin_link(org.id, subject="Ada (admin)"))
    page.locator(LEADERBOARD_READY).wait_for(state="attached")
    routes = {
        "leaderboard": ("/leaderboard", LEADERBOARD_READY),
        "graph": ("/graph", GRAPH_READY),
        "teams": ("/teams", TEAMS_READY),
        "team": (f"/team/{org.teams['Owls']}", TEAM_READY),
        "members": ("/members", MEMBERS_READY),
        "onboarding": ("/onboarding", ONBOARDING_READY),
        "disciplines": ("/disciplines", DISCIPLINES_READY),
        "discipline": (f"/discipline/{org.discipline['Id']}", DISCIPLINE_READY),
        "editor": (f"/discipline/{org.discipline['Id']}/edit", EDITOR_READY),
        "seasons": ("/seasons", "#seasons-table[data-loaded]"),
        "review": ("/review", "#review-table[data-loaded]"),
    }
    for name, (route, ready) in routes.items():
        visit(page, live, route, ready)
        if name == "team":
            page.locator("#team-graph-chart[data-loaded]").wait_for(state="attached")
            page.locator("#complete-task-form[data-loaded]").wait_for(state="attached")
            page.locator("#completions-table[data-loaded]").wait_for(state="attached")
        check_accessibility(page, f"{name} ({scheme}, {width})")
        path = screenshot(page, f"{name}-{scheme}")
        if os.environ.get("QUESTLINE_SCREENSHOTS") == "docs" and (
            width == "desktop" or name in ("leaderboard", "team")
        ):
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOCS_SCREENSHOTS / path.name)
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{name} scrolls sideways by {overflow}px at {width} width"


def test_the_link_that_questline_demo_prints_opens_the_demo(
    browser: Browser, tmp_path: Path
) -> None:
    """`questline demo` into an empty data directory, then `questline serve`: the printed
    dashboard link signs in and shows the demo's leaderboard and graph."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    printed = run_cli(["demo"], server_env(tmp_path, None, origin), cwd=tmp_path)
    found = re.search(r"^dashboard:\s+(\S+)$", printed, re.MULTILINE)
    assert found, printed
    link = found.group(1)
    assert link.startswith(f"{origin}/ui/#code=")

    with live_server(tmp_path, port=port, migrate=False) as server:
        pages = Pages(browser=browser, origin=origin, guard=Guard(origin=origin))
        try:
            page = pages.open()
            server.ready()
            page.goto(link)
            page.locator(LEADERBOARD_READY).wait_for(state="attached")
            assert page.url == f"{origin}/ui/#/leaderboard"
            rows = page.locator("tr[data-testid=leaderboard-row]")
            expect(rows).to_have_count(len(demo.TEAM_NAMES) - 1)
            expect(page.locator("#leaderboard-table")).not_to_contain_text(demo.ADMIN_TEAM)
            expect(page.locator("[data-testid=session-role]")).to_have_text("admin")
            screenshot(page, "demo-leaderboard")
            visit(page, server, "/graph", GRAPH_READY)
            expect(page.locator("li[data-testid=graph-legend-item]")).to_have_count(10)
            expect(page.locator("#graph-legend")).not_to_contain_text(demo.ADMIN_TEAM)
            screenshot(page, "demo-graph")
        finally:
            pages.close()
        pages.guard.check()

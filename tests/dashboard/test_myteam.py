"""End-to-end: a learner on the dashboard's My team page in Chromium against a live
server — signing in lands there; a wrong answer then a right one (the attempts left,
the score and the leaderboard change); Mark done; a hint unlocked after a confirmation
(its text shown, its cost taken); a submission rejected then resubmitted and approved,
with the reviewer's comment; a sequential discipline's closed level opening. Each step
is checked through the API too; axe finds no serious violation on the page."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from questline.web.identity import Role
from tests.dashboard.browser import Pages, check_accessibility
from tests.dashboard.live import LiveServer
from tests.dashboard.seed import SeededOrg
from tests.dashboard.test_admin_flows import sign_in
from tests.dashboard.test_e2e import (
    DISCIPLINE_READY,
    EDITOR_READY,
    LEADERBOARD_READY,
    NEW_DISCIPLINE_READY,
    visit,
)
from tests.factories import unique

pytestmark = pytest.mark.slow

READY = '#view[data-route="myteam"] #myteam-paths[data-loaded]'


def task(title: str, points: int, check: dict[str, Any], hints: list[Any] | None = None) -> Any:
    return {"Title": title, "Points": points, "Check": check, "Hints": hints or []}


def learner(live: LiveServer, org: SeededOrg, discipline: dict[str, Any]) -> tuple[str, Any]:
    """The discipline, and Ada, a member of Wolves (score 0) signed in by a link."""
    with live.client(org.admin_token) as api:
        made = api.post("/discipline", json={"Description": "x", **discipline})
        assert made.status_code == 201, made.text
        email = f"{unique('ada')}@example.org"
        added = api.post(
            f"/team/{org.teams['Wolves']}/members", json={"email": email, "givenName": "Ada"}
        )
        assert added.status_code == 201, added.text
    return email, made.json()


def tasks_of(doc: dict[str, Any]) -> list[str]:
    return [t["Id"] for lv in doc["Levels"] for q in lv["Quests"] for t in q["Tasks"]]


def open_my_team(page: Page, live: LiveServer, org: SeededOrg, email: str) -> None:
    page.goto(live.signin_link(org.id, Role.MEMBER, subject=email, email=email))
    page.locator(READY).wait_for(state="attached")
    assert page.url == f"{live.origin}/ui/#/myteam"  # a learner lands on My team


def item(page: Page, task_id: str) -> Any:
    return page.locator(f"li[data-testid=myteam-task][data-task-id='{task_id}']")


def score(live: LiveServer, org: SeededOrg) -> int:
    with live.client(org.admin_token) as api:
        return int(api.get(f"/team/{org.teams['Wolves']}/overview").json()["Score"])


def test_a_learner_answers_marks_done_and_unlocks_a_hint(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    email, doc = learner(
        live,
        org,
        {
            "Title": unique("Learner e2e"),
            "Levels": [
                {
                    "Title": "Start",
                    "Quests": [
                        {
                            "Title": "Cloud",
                            "Tasks": [
                                task(
                                    "Name the region",
                                    40,
                                    {
                                        "Kind": "Answer",
                                        "Answers": [{"Value": "eu-west-1"}],
                                        "MaxAttempts": 3,
                                    },
                                    [{"Text": "It is in Ireland.", "Cost": 5}],
                                ),
                                task("Read the guide", 10, {"Kind": "Self"}),
                            ],
                        }
                    ],
                }
            ],
        },
    )
    answer_task, self_task = tasks_of(doc)
    page = pages.open()
    pages.guard.allow_console(r"status of 4\d\d")
    open_my_team(page, live, org, email)
    expect(page.locator("[data-testid=myteam-score]")).to_have_text("0")
    answer = item(page, answer_task)
    expect(answer.locator("[data-testid=myteam-attempts-left]")).to_have_text("3 attempts left.")
    check_accessibility(page, "my team")

    # A hint: asked first (Cancel keeps the points), then paid.
    answer.locator("[data-testid=myteam-hint-unlock]").click()
    confirmation = answer.locator("[data-testid=myteam-hint-confirmation]")
    expect(confirmation).to_be_visible()
    expect(confirmation).to_contain_text("goes down by 5 points")
    expect(answer.locator("[data-testid=myteam-hint-confirm]")).to_be_focused()
    answer.locator("[data-testid=myteam-hint-cancel]").click()
    expect(confirmation).to_be_hidden()
    assert score(live, org) == 0
    answer.locator("[data-testid=myteam-hint-unlock]").click()
    answer.locator("[data-testid=myteam-hint-confirm]").click()
    expect(answer.locator("[data-testid=myteam-hint-text]")).to_have_text("It is in Ireland.")
    expect(page.locator("[data-testid=myteam-score]")).to_have_text("-5")
    assert score(live, org) == -5

    # Wrong, then right: the attempts left go down, then the task is done.
    answer.locator("[data-testid=myteam-answer]").fill("us-east-1")
    answer.locator("[data-testid=myteam-answer]").press("Enter")
    expect(page.locator("#notice")).to_contain_text("Not right. 2 attempts left.")
    expect(answer.locator("[data-testid=myteam-attempts-left]")).to_have_text("2 attempts left.")
    assert score(live, org) == -5
    answer.locator("[data-testid=myteam-answer]").fill("eu-west-1")
    answer.locator("[data-testid=myteam-answer-submit]").click()
    expect(page.locator("#notice")).to_contain_text("Right!")
    expect(answer).to_have_attribute("data-state", "done")
    expect(page.locator("[data-testid=myteam-score]")).to_have_text("35")
    assert score(live, org) == 35

    # Self-check.
    item(page, self_task).locator("[data-testid=myteam-mark-done]").click()
    expect(item(page, self_task)).to_have_attribute("data-state", "done")
    expect(page.locator("[data-testid=myteam-score]")).to_have_text("45")
    with live.client(org.admin_token) as api:
        done = api.get(f"/team/{org.teams['Wolves']}/progress/{self_task}")
        members = api.get(f"/team/{org.teams['Wolves']}/members").json()
    assert done.status_code == 200, done.text
    ada = next(m for m in members if m["Email"].lower() == email.lower())
    assert done.json()["MemberId"] == ada["Id"]
    check_accessibility(page, "my team (done)")

    # The leaderboard shows the new score.
    visit(page, live, "/leaderboard", LEADERBOARD_READY)
    row = page.locator(f"tr[data-testid=leaderboard-row][data-team-id='{org.teams['Wolves']}']")
    expect(row.locator("[data-testid=leaderboard-score]")).to_have_text("45")
    expect(row).to_have_attribute("data-mine", "true")


def test_a_submission_rejected_resubmitted_and_a_sequential_level_opening(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    email, doc = learner(
        live,
        org,
        {
            "Title": unique("Sequential e2e"),
            "Sequential": True,
            "Levels": [
                {
                    "Title": "Build",
                    "Quests": [
                        {
                            "Title": "Robot",
                            "Tasks": [task("Film the robot", 20, {"Kind": "Review"})],
                        }
                    ],
                },
                {
                    "Title": "Race",
                    "Quests": [{"Title": "Track", "Tasks": [task("Race it", 5, {"Kind": "Self"})]}],
                },
            ],
        },
    )
    review_task, self_task = tasks_of(doc)
    page = pages.open()
    pages.guard.allow_console(r"status of 4\d\d")
    open_my_team(page, live, org, email)
    section = page.locator(f"[data-testid=myteam-discipline][data-discipline-id='{doc['Id']}']")
    levels = section.locator("[data-testid=myteam-level]")
    expect(levels.nth(1)).to_have_attribute("data-open", "false")
    expect(levels.nth(1).locator("[data-testid=myteam-opens]")).to_contain_text("level 1: Build")
    expect(item(page, self_task)).to_have_attribute("data-state", "closed")
    expect(item(page, self_task).locator("[data-testid=myteam-mark-done]")).to_have_count(0)

    work = item(page, review_task)
    work.locator("[data-testid=myteam-work-url]").fill("https://example.org/video/1")
    work.locator("[data-testid=myteam-work-submit]").click()
    submission = work.locator("[data-testid=myteam-submission]")
    expect(submission).to_have_attribute("data-state", "Pending")
    expect(work.locator("[data-testid=myteam-work-submit]")).to_have_count(0)
    with live.client(org.admin_token) as api:
        sent = api.get(f"/team/{org.teams['Wolves']}/submissions").json()
        assert [s["State"] for s in sent] == ["Pending"]
        rejected = api.post(
            f"/submission/{sent[0]['Id']}/reject", json={"Comment": "The video is private."}
        )
        assert rejected.status_code == 200, rejected.text

    page.reload()
    page.locator(READY).wait_for(state="attached")
    work = item(page, review_task)
    expect(work.locator("[data-testid=myteam-submission]")).to_have_attribute(
        "data-state", "Rejected"
    )
    expect(work.locator("[data-testid=myteam-review-comment]")).to_contain_text(
        "The video is private."
    )
    check_accessibility(page, "my team (sent back)")
    work.locator("[data-testid=myteam-work-text]").fill("Now public.")
    work.locator("[data-testid=myteam-work-url]").fill("https://example.org/video/2")
    work.locator("[data-testid=myteam-work-submit]").click()
    expect(work.locator("[data-testid=myteam-submission]")).to_have_attribute(
        "data-state", "Pending"
    )
    with live.client(org.admin_token) as api:
        sent = api.get(f"/team/{org.teams['Wolves']}/submissions").json()
        assert [s["State"] for s in sent] == ["Rejected", "Pending"]
        approved = api.post(f"/submission/{sent[1]['Id']}/approve", json={"Comment": "Great."})
        assert approved.status_code == 200, approved.text

    # Approved: the task is done and the next level opens.
    page.reload()
    page.locator(READY).wait_for(state="attached")
    expect(item(page, review_task)).to_have_attribute("data-state", "done")
    expect(levels.nth(1)).to_have_attribute("data-open", "true")
    item(page, self_task).locator("[data-testid=myteam-mark-done]").click()
    expect(item(page, self_task)).to_have_attribute("data-state", "done")
    expect(page.locator("[data-testid=myteam-score]")).to_have_text("25")
    check_accessibility(page, "my team (sequential)")


def test_a_member_of_no_team_is_told_so(pages: Pages, live: LiveServer, org: SeededOrg) -> None:
    page = pages.open()
    page.goto(live.signin_link(org.id, Role.MEMBER, subject="nobody"))
    page.locator(LEADERBOARD_READY).wait_for(state="attached")  # no team: the leaderboard
    expect(page.locator("a[data-route=myteam]")).to_be_hidden()
    visit(page, live, "/myteam", "[data-testid=myteam-none]")
    check_accessibility(page, "my team (none)")


def test_the_editor_sets_checks_hints_and_sequential(
    pages: Pages, live: LiveServer, org: SeededOrg
) -> None:
    def at(path: str) -> str:
        return f"#discipline-editor [data-path='{path}']"

    page = pages.open()
    sign_in(page, live, org)
    visit(page, live, "/disciplines/new", NEW_DISCIPLINE_READY)
    title = unique("Checks e2e")
    page.locator(at("Title")).fill(title)
    page.locator(at("Description")).fill("x")
    page.locator(at("Sequential")).check()
    page.locator("#editor-add-level").click()
    page.keyboard.type("One")
    page.locator("[data-add=quest]").click()
    page.keyboard.type("Q")
    page.locator("[data-add=task]").click()
    page.keyboard.type("The answer")
    t = "Levels[0].Quests[0].Tasks[0]"
    page.locator(at(f"{t}.Check.Kind")).select_option("Answer")
    expect(page.locator(at(f"{t}.Check.Kind"))).to_be_focused()  # kept through the redraw
    page.locator(at(f"{t}.Check.Answers[0].Value")).fill("Forty-two")
    page.locator(at(f"{t}.Check.Answers[0].Match")).select_option("IgnoreCase")
    page.locator(at(f"{t}.Check.MaxAttempts")).fill("2")
    page.locator("[data-add=hint]").click()
    expect(page.locator(at(f"{t}.Hints[0].Text"))).to_be_focused()
    page.keyboard.type("Think of a towel.")
    page.locator(at(f"{t}.Hints[0].Cost")).fill("3")
    check_accessibility(page, "editor (checks)")
    page.locator("#editor-save").click()
    page.locator(DISCIPLINE_READY).wait_for(state="attached")

    with live.client(org.admin_token) as api:
        made = next(d for d in api.get("/discipline").json() if d["Title"] == title)
        doc = api.get(f"/discipline/{made['Id']}").json()
    task_doc = doc["Levels"][0]["Quests"][0]["Tasks"][0]
    assert doc["Sequential"] is True
    assert (task_doc["Check"]["Kind"], task_doc["Check"]["MaxAttempts"]) == ("Answer", 2)
    [stored] = task_doc["Check"]["Answers"]
    assert stored["Match"] == "IgnoreCase"
    assert stored["Digest"].startswith("qd1:")
    assert task_doc["Hints"] == [{"Text": "Think of a towel.", "Cost": 3}]

    # Editing keeps the stored answer (sent back by its digest): only the attempts change.
    visit(page, live, f"/discipline/{made['Id']}/edit", EDITOR_READY)
    expect(page.locator("[data-testid=editor-answer]")).to_contain_text("stored")
    page.locator(at(f"{t}.Check.MaxAttempts")).fill("4")
    page.locator("#editor-save").click()
    page.locator(DISCIPLINE_READY).wait_for(state="attached")
    with live.client(org.admin_token) as api:
        again = api.get(f"/discipline/{made['Id']}").json()["Levels"][0]["Quests"][0]["Tasks"][0]
    assert again["Check"]["MaxAttempts"] == 4
    assert again["Check"]["Answers"] == [stored]
    token = live.tokens.mint(role=Role.MEMBER, org_id=org.id, subject="x@example.org")
    with live.client(token) as member:
        seen = member.get(f"/discipline/{made['Id']}").json()["Levels"][0]["Quests"][0]
    assert seen["Tasks"][0]["Hints"] == [{"Cost": 3}]  # members never read a hint's text


@pytest.mark.parametrize("dark", [False, True])
def test_my_team_fits_a_phone_light_and_dark(
    pages: Pages, live: LiveServer, org: SeededOrg, dark: bool
) -> None:
    """Every kind of task, a hint and a closed level at phone width: no sideways
    scrolling, and axe finds no serious violation in either scheme."""
    answer = {"Kind": "Answer", "Answers": [{"Value": "x"}], "MaxAttempts": 2}
    email, _ = learner(
        live,
        org,
        {
            "Title": unique("Phone e2e"),
            "Sequential": True,
            "Levels": [
                {
                    "Title": "First",
                    "Quests": [
                        {
                            "Title": "All kinds",
                            "Tasks": [
                                task("Type it", 5, answer, [{"Text": "a", "Cost": 2}]),
                                task("Do it", 5, {"Kind": "Self"}),
                                task(
                                    "Film it with a rather long title to wrap",
                                    5,
                                    {"Kind": "Review"},
                                ),
                                task("Shown by an admin", 5, {"Kind": "Admin"}),
                            ],
                        }
                    ],
                },
                {
                    "Title": "Second",
                    "Quests": [{"Title": "Q", "Tasks": [task("Later", 5, {"Kind": "Self"})]}],
                },
            ],
        },
    )
    page = pages.open("phone", dark=dark)
    open_my_team(page, live, org, email)
    expect(page.locator("[data-testid=myteam-opens]")).to_have_count(1)
    check_accessibility(page, f"my team (phone, {'dark' if dark else 'light'})")
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"My team scrolls sideways by {overflow}px on a phone"

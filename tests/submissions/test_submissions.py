"""Submitting work for review: who may, what is refused, and who reads it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from questline.web.identity import Role
from tests.factories import World
from tests.submissions.support import (
    learner,
    review_discipline,
    submit,
    submitted,
    token_for,
)

pytestmark = pytest.mark.anyio


async def test_a_member_submits_work_and_the_team_and_admins_read_it(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    bea = await learner(world, org, team["Id"], "Bea")
    response = await submit(
        world.client,
        team["Id"],
        ada,
        tasks[0],
        text="  The arm lifts the cube.\nPhotos attached.  ",
        url="https://example.org/work/1",
    )
    assert response.status_code == 201, response.text
    made = response.json()
    assert made == {
        "Id": made["Id"],
        "TeamId": team["Id"],
        "TaskId": tasks[0],
        "MemberId": ada.id,
        "Text": "The arm lifts the cube.\nPhotos attached.",
        "Url": "https://example.org/work/1",
        "State": "Pending",
        "SubmittedAt": made["SubmittedAt"],
        "DecidedAt": None,
        "DecidedBy": None,
        "Comment": None,
    }
    assert response.headers["Location"].endswith(f"/submission/{made['Id']}")
    for headers in (ada.headers, bea.headers, org.admin):
        one = await world.client.get(f"/submission/{made['Id']}", headers=headers)
        assert one.status_code == 200, one.text
        assert one.json() == made
        listed = await world.client.get(f"/team/{team['Id']}/submissions", headers=headers)
        assert listed.status_code == 200
        assert listed.json() == [made]
    queue = await world.client.get("/submission?state=Pending", headers=org.admin)
    assert [s["Id"] for s in queue.json()] == [made["Id"]]
    link_only = await submitted(world.client, team["Id"], bea, tasks[1], url="http://x.example/a")
    assert link_only["Text"] is None
    assert link_only["MemberId"] == bea.id


async def test_one_pending_submission_per_team_and_task(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    other_team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    bea = await learner(world, org, team["Id"], "Bea")
    cy = await learner(world, org, other_team["Id"], "Cy")
    first = await submitted(world.client, team["Id"], ada, tasks[0])
    again = await submit(world.client, team["Id"], bea, tasks[0])
    assert again.status_code == 409, again.text
    assert again.json()["type"].endswith("/submission-pending")
    assert first["Id"] in again.json()["detail"]
    # Another task of the team, and the same task for another team, are free.
    assert (await submit(world.client, team["Id"], bea, tasks[1])).status_code == 201
    assert (await submit(world.client, other_team["Id"], cy, tasks[0])).status_code == 201


async def test_two_members_submitting_at_once_make_one_submission(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    bea = await learner(world, org, team["Id"], "Bea")
    answers = await asyncio.gather(
        submit(world.client, team["Id"], ada, tasks[0]),
        submit(world.client, team["Id"], bea, tasks[0]),
    )
    assert sorted(a.status_code for a in answers) == [201, 409]
    listed = await world.client.get(f"/team/{team['Id']}/submissions", headers=org.admin)
    assert len(listed.json()) == 1


async def test_only_review_tasks_take_submissions(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org, ["Admin", "Self", "Review"])
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    for task in tasks[:2]:
        refused = await submit(world.client, team["Id"], ada, task)
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["field"] == "TaskId"
    assert (await submit(world.client, team["Id"], ada, tasks[2])).status_code == 201


async def test_an_archived_team_and_a_completed_task_refuse_submissions(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    done = await world.client.post(
        f"/team/{team['Id']}/progress", json={"TaskId": tasks[0]}, headers=org.admin
    )
    assert done.status_code == 201
    completed = await submit(world.client, team["Id"], ada, tasks[0])
    assert completed.status_code == 409
    assert completed.json()["type"].endswith("/already-completed")
    archived = await world.client.patch(
        f"/team/{team['Id']}", json={"Status": "Archived"}, headers=org.admin
    )
    assert archived.status_code == 200, archived.text
    refused = await submit(world.client, team["Id"], ada, tasks[1])
    assert refused.status_code == 409
    assert "archived" in refused.json()["detail"]


async def test_who_may_submit_and_read(world: World) -> None:
    org, elsewhere = world.org(), world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    other_team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    cy = await learner(world, org, other_team["Id"], "Cy")
    made = await submitted(world.client, team["Id"], ada, tasks[0])
    foreign_team = await elsewhere.create_team()
    foreign = await learner(world, elsewhere, foreign_team["Id"], "Fay")
    # Same e-mail as Ada, but a token of another organization: not her.
    ada_elsewhere = token_for(world, elsewhere, ada.email)
    unknown_email = token_for(world, org, "nobody@example.org")
    admin_with_member = token_for(world, org, ada.email, Role.ADMIN)

    refusals: list[tuple[dict[str, str], int]] = [
        (cy.headers, 403),  # a member of another team
        (org.member, 403),  # a token with no e-mail: no member
        (unknown_email, 403),
        (org.admin, 403),  # an admin is no member of the team
        (foreign.headers, 404),  # another organization's member
        (elsewhere.admin, 404),
        (ada_elsewhere, 404),
    ]
    for headers, expected in refusals:
        refused = await submit(world.client, team["Id"], _as(headers), tasks[1])
        assert refused.status_code == expected, (headers, refused.text)
        assert refused.headers["content-type"].startswith("application/problem+json")
    # An admin whose e-mail is a member of the team submits as that member.
    own = await submit(world.client, team["Id"], _as(admin_with_member), tasks[1])
    assert own.status_code == 201, own.text
    assert own.json()["MemberId"] == ada.id

    reads = [f"/submission/{made['Id']}", f"/team/{team['Id']}/submissions"]
    for url in reads:
        for headers, expected in (
            (cy.headers, 403),
            (org.member, 403),
            (foreign.headers, 404),
            (elsewhere.admin, 404),
        ):
            response = await world.client.get(url, headers=headers)
            assert response.status_code == expected, (url, response.text)
            assert "SubmittedAt" not in response.text
    for headers, expected in ((ada.headers, 403), (cy.headers, 403), (elsewhere.admin, 200)):
        queue = await world.client.get("/submission", headers=headers)
        assert queue.status_code == expected
        if expected == 200:
            assert queue.json() == []
    # A task of another organization's discipline is no task here.
    _, foreign_tasks = await review_discipline(elsewhere)
    unseen = await submit(world.client, team["Id"], ada, foreign_tasks[0])
    assert unseen.status_code == 404


def _as(headers: dict[str, str]) -> Any:
    """A stand-in learner with these headers."""
    from tests.submissions.support import Learner

    return Learner(id="", email="", headers=headers)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"Text": "x"},
        {"TaskId": "TASK"},
        {"TaskId": "TASK", "Text": "   "},
        {"TaskId": "TASK", "Text": None, "Url": None},
        {"TaskId": "TASK", "Text": "x" * 10_001},
        {"TaskId": "TASK", "Text": "nul\x00"},
        {"TaskId": "TASK", "Url": "ftp://example.org/x"},
        {"TaskId": "TASK", "Url": "javascript:alert(1)"},
        {"TaskId": "TASK", "Url": "/relative"},
        {"TaskId": "TASK", "Url": "https://" + "x" * 2100 + ".org"},
        {"TaskId": "TASK", "Url": 12},
        {"TaskId": "TASK", "Text": ["x"]},
        {"TaskId": "not-a-uuid", "Text": "x"},
        {"TaskId": "TASK", "Text": "x", "Points": 10},
        [],
        "text",
    ],
)
async def test_invalid_submissions_are_refused(world: World, body: Any) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    if isinstance(body, dict) and body.get("TaskId") == "TASK":
        body = {**body, "TaskId": tasks[0]}
    response = await world.client.post(
        f"/team/{team['Id']}/submissions", json=body, headers=ada.headers
    )
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    listed = await world.client.get(f"/team/{team['Id']}/submissions", headers=org.admin)
    assert listed.json() == []


async def test_malformed_requests_are_4xx(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    url = f"/team/{team['Id']}/submissions"
    broken = await world.client.post(
        url, content=b'{"TaskId": ', headers={**ada.headers, "Content-Type": "application/json"}
    )
    assert broken.status_code == 400
    as_text = await world.client.post(
        url, content=b"TaskId", headers={**ada.headers, "Content-Type": "text/plain"}
    )
    assert as_text.status_code == 415
    for path in ("/submission/nope", f"/submission/{uuid.uuid4()}"):
        assert (await world.client.get(path, headers=org.admin)).status_code == 404
        approve = await world.client.post(f"{path}/approve", headers=org.admin)
        assert approve.status_code == 404
    assert (await world.client.get("/team/nope/submissions", headers=org.admin)).status_code == 404
    for query in ("state=Maybe", "team=nope", "task=12", "limit=0", "after=forged.cursor"):
        response = await world.client.get(f"/submission?{query}", headers=org.admin)
        assert response.status_code == 422, (query, response.text)
    unknown_task = await submit(world.client, team["Id"], ada, str(uuid.uuid4()))
    assert unknown_task.status_code == 404
    assert (await submit(world.client, team["Id"], ada, tasks[0])).status_code == 201


async def test_the_queue_is_oldest_first_filtered_and_paged(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org, ["Review", "Review", "Review"])
    teams = [await org.create_team() for _ in range(2)]
    people = [await learner(world, org, team["Id"]) for team in teams]
    made = []
    for task in tasks:
        for team, person in zip(teams, people, strict=True):
            made.append(await submitted(world.client, team["Id"], person, task))
    rejected = await world.client.post(
        f"/submission/{made[0]['Id']}/reject", json={"Comment": "Blurry."}, headers=org.admin
    )
    assert rejected.status_code == 200
    every = (await world.client.get("/submission", headers=org.admin)).json()
    assert [s["Id"] for s in every] == [s["Id"] for s in made]
    pending = (await world.client.get("/submission?state=Pending", headers=org.admin)).json()
    assert [s["Id"] for s in pending] == [s["Id"] for s in made[1:]]
    by_team = await world.client.get(
        f"/submission?team={teams[1]['Id']}&task={tasks[2]}", headers=org.admin
    )
    assert [s["Id"] for s in by_team.json()] == [made[5]["Id"]]
    seen: list[str] = []
    url: str | None = "/submission?state=Pending&limit=2"
    while url is not None:
        page = await world.client.get(url, headers=org.admin)
        assert page.status_code == 200, page.text
        assert len(page.json()) <= 2
        seen += [s["Id"] for s in page.json()]
        link = page.headers.get("Link")
        url = None if link is None else link.split(";")[0].strip("<>")
    assert seen == [s["Id"] for s in made[1:]]
    team_page = await world.client.get(
        f"/team/{teams[0]['Id']}/submissions?limit=1", headers=people[0].headers
    )
    assert [s["Id"] for s in team_page.json()] == [made[0]["Id"]]
    assert 'rel="next"' in team_page.headers["Link"]


async def test_a_closed_level_refuses_submissions(world: World) -> None:
    org = world.org()
    levels = [
        {
            "Title": title,
            "Quests": [{"Title": "Q", "Tasks": [{"Title": task, "Check": {"Kind": "Review"}}]}],
        }
        for title, task in (("Basics", "Wire it"), ("Advanced", "Film it"))
    ]
    created = await world.client.post(
        "/discipline",
        json={"Title": "Robots", "Description": "x", "Sequential": True, "Levels": levels},
        headers=org.admin,
    )
    assert created.status_code == 201, created.text
    first, second = (level["Quests"][0]["Tasks"][0]["Id"] for level in created.json()["Levels"])
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    locked = await submit(world.client, team["Id"], ada, second)
    assert locked.status_code == 409, locked.text
    assert locked.json()["type"].endswith("/locked")
    assert "Basics" in locked.json()["detail"]
    made = await submitted(world.client, team["Id"], ada, first)
    approved = await world.client.post(f"/submission/{made['Id']}/approve", headers=org.admin)
    assert approved.status_code == 200
    assert (await submit(world.client, team["Id"], ada, second)).status_code == 201

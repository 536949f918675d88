"""Completing and withdrawing tasks: score arithmetic, history, errors, isolation."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from tests.factories import World
from tests.progress.factories import (
    at,
    complete,
    completed,
    history,
    iso,
    make_discipline,
    score_of,
)

pytestmark = pytest.mark.anyio


async def test_completing_adds_points_once_and_records_history(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 25]]])
    before = await world.client.get(f"/team/{team['Id']}", headers=org.member)
    first = await complete(org, team["Id"], tree.task(0, 0, 0))
    assert first.status_code == 201, first.text
    body = first.json()
    assert body["TeamId"] == team["Id"]
    assert body["TaskId"] == tree.task(0, 0, 0)
    assert body["DisciplineId"] == str(tree.id)
    assert body["Points"] == 10
    assert body["Score"] == 10
    assert body["CompletedAt"].endswith("Z")
    assert first.headers["Location"].endswith(f"/team/{team['Id']}/progress/{tree.task(0, 0, 0)}")
    again = await complete(org, team["Id"], tree.task(0, 0, 0), at(1))
    assert again.status_code == 200
    assert again.json()["Score"] == 10
    assert again.json()["CompletedAt"] == body["CompletedAt"]  # the first completion stays
    assert await completed(org, team["Id"], tree.task(0, 0, 1)) == 35
    after = await world.client.get(f"/team/{team['Id']}", headers=org.member)
    assert after.json()["Score"] == 35
    assert after.headers["ETag"] != before.headers["ETag"]
    rows = await history(world.db, team["Id"])
    assert [(r.kind, r.delta, r.score_after) for r in rows] == [
        ("Completed", 10, 10),
        ("Completed", 25, 35),
    ]
    assert {r.discipline_id for r in rows} == {str(tree.id)}
    one = await world.client.get(first.headers["Location"], headers=org.member)
    assert one.status_code == 200
    assert one.json()["Points"] == 10
    listed = await world.client.get(f"/team/{team['Id']}/progress", headers=org.member)
    assert [c["TaskId"] for c in listed.json()] == [tree.task(0, 0, 0), tree.task(0, 0, 1)]


async def test_withdrawal_appends_a_negative_step(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 7]]])
    await completed(org, team["Id"], tree.task(0, 0, 0), at(1))
    await completed(org, team["Id"], tree.task(0, 0, 1), at(2))
    url = f"/team/{team['Id']}/progress/{tree.task(0, 0, 0)}"
    response = await world.client.delete(url, headers=org.admin)
    assert response.status_code == 204
    assert await score_of(org, team["Id"]) == 7
    assert (await world.client.delete(url, headers=org.admin)).status_code == 404
    assert (await world.client.get(url, headers=org.member)).status_code == 404
    # completing it again counts again
    assert await completed(org, team["Id"], tree.task(0, 0, 0)) == 17
    rows = await history(world.db, team["Id"])
    assert [(r.kind, r.delta, r.score_after) for r in rows] == [
        ("Completed", 10, 10),
        ("Completed", 7, 17),
        ("Withdrawn", -10, 7),
        ("Completed", 10, 17),
    ]


async def test_points_awarded_are_the_points_taken_back(world: World) -> None:
    """A task whose points change later: withdrawal takes back what was awarded."""
    from sqlalchemy import update

    from questline.disciplines.models import Task

    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    await completed(org, team["Id"], tree.task(0, 0, 0))
    async with world.db.session() as session:
        await session.execute(update(Task).values(points=99))
    url = f"/team/{team['Id']}/progress/{tree.task(0, 0, 0)}"
    assert (await world.client.delete(url, headers=org.admin)).status_code == 204
    assert await score_of(org, team["Id"]) == 0


async def test_global_discipline_tasks_count_and_foreign_ones_are_404(world: World) -> None:
    org, other = world.org(), world.org()
    team = await org.create_team()
    shared = await make_discipline(world.db, org_id=None, shape=[[[5]]])
    foreign = await make_discipline(world.db, org_id=other.id, shape=[[[50]]])
    assert await completed(org, team["Id"], shared.task(0, 0, 0)) == 5
    response = await complete(org, team["Id"], foreign.task(0, 0, 0))
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    unknown = await complete(org, team["Id"], str(uuid.uuid4()))
    assert unknown.status_code == 404
    assert await score_of(org, team["Id"]) == 5
    assert len(await history(world.db, team["Id"])) == 1


async def test_archived_team_refuses_progress(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 10]]])
    await completed(org, team["Id"], tree.task(0, 0, 0))
    patch = await world.client.patch(
        f"/team/{team['Id']}", json={"Status": "Archived"}, headers=org.admin
    )
    assert patch.status_code == 200
    response = await complete(org, team["Id"], tree.task(0, 0, 1))
    assert response.status_code == 409
    withdraw = await world.client.delete(
        f"/team/{team['Id']}/progress/{tree.task(0, 0, 0)}", headers=org.admin
    )
    assert withdraw.status_code == 409
    assert await score_of(org, team["Id"]) == 10
    assert len(await history(world.db, team["Id"])) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"TaskId": "nope"}, "TaskId"),
        ({}, "TaskId"),
        ({"TaskId": None}, "TaskId"),
        ({"TaskId": "TASK", "CompletedAt": "yesterday"}, "CompletedAt"),
        ({"TaskId": "TASK", "CompletedAt": "2026-01-01T10:00:00"}, "CompletedAt"),
        ({"TaskId": "TASK", "CompletedAt": "FUTURE"}, "CompletedAt"),
        ({"TaskId": "TASK", "Points": 1000}, "Points"),
    ],
)
async def test_bad_input_is_422_naming_the_field_and_writes_nothing(
    world: World, body: dict[str, object], field: str
) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    future = iso(dt.datetime.now(dt.UTC) + dt.timedelta(hours=1))
    body = {
        k: (tree.task(0, 0, 0) if v == "TASK" else future if v == "FUTURE" else v)
        for k, v in body.items()
    }
    response = await world.client.post(f"/team/{team['Id']}/progress", json=body, headers=org.admin)
    assert response.status_code == 422, response.text
    assert field in [e["field"] for e in response.json()["errors"]]
    assert await score_of(org, team["Id"]) == 0
    assert await history(world.db, team["Id"]) == []


async def test_input_names_are_case_insensitive(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[3]]])
    response = await world.client.post(
        f"/team/{team['Id']}/progress",
        json={"taskid": tree.task(0, 0, 0), "completedAT": at(3)},
        headers=org.admin,
    )
    assert response.status_code == 201, response.text
    assert response.json()["CompletedAt"] == at(3)


async def test_member_token_may_read_but_not_write(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 10]]])
    await completed(org, team["Id"], tree.task(0, 0, 0))
    post = await world.client.post(
        f"/team/{team['Id']}/progress", json={"TaskId": tree.task(0, 0, 1)}, headers=org.member
    )
    assert post.status_code == 403
    delete = await world.client.delete(
        f"/team/{team['Id']}/progress/{tree.task(0, 0, 0)}", headers=org.member
    )
    assert delete.status_code == 403
    assert await score_of(org, team["Id"]) == 10
    for path in ("progress", "overview", "graph"):
        read = await world.client.get(f"/team/{team['Id']}/{path}", headers=org.member)
        assert read.status_code == 200, path


async def test_another_organization_gets_404_and_changes_nothing(world: World) -> None:
    org, other = world.org(), world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=None, shape=[[[10, 10]]])
    await completed(org, team["Id"], tree.task(0, 0, 0))
    base = f"/team/{team['Id']}"
    requests = [
        ("POST", f"{base}/progress", {"TaskId": tree.task(0, 0, 1)}),
        ("DELETE", f"{base}/progress/{tree.task(0, 0, 0)}", None),
        ("GET", f"{base}/progress", None),
        ("GET", f"{base}/progress/{tree.task(0, 0, 0)}", None),
        ("GET", f"{base}/overview", None),
        ("GET", f"{base}/graph", None),
    ]
    for method, path, body in requests:
        response = await world.client.request(method, path, json=body, headers=other.admin)
        assert response.status_code == 404, (method, path, response.text)
    assert await score_of(org, team["Id"]) == 10
    assert len(await history(world.db, team["Id"])) == 1


async def test_malformed_ids_in_paths_are_404(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    for method, path in [
        ("POST", "/team/nope/progress"),
        ("DELETE", f"/team/{team['Id']}/progress/nope"),
        ("GET", "/team/nope/overview"),
        ("GET", "/team/nope/graph"),
        ("GET", f"/team/{uuid.uuid4()}/overview"),
    ]:
        body = {"TaskId": str(uuid.uuid4())} if method == "POST" else None
        response = await world.client.request(method, path, json=body, headers=org.admin)
        assert response.status_code == 404, (method, path)


async def test_retried_post_with_the_same_idempotency_key_replays(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 5]]])
    key = {"Idempotency-Key": "complete-1"}
    first = await complete(org, team["Id"], tree.task(0, 0, 0), at(1), **key)
    assert first.status_code == 201
    retry = await complete(org, team["Id"], tree.task(0, 0, 0), at(1), **key)
    assert retry.status_code == 201  # the stored response, not the 200 of a new attempt
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.json() == first.json()
    other_body = await complete(org, team["Id"], tree.task(0, 0, 1), **key)
    assert other_body.status_code == 422
    assert await score_of(org, team["Id"]) == 10
    assert len(await history(world.db, team["Id"])) == 1


async def test_deleting_a_team_takes_its_progress_and_history_with_it(world: World) -> None:
    org = world.org()
    team, stays = await org.create_team(), await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    await completed(org, team["Id"], tree.task(0, 0, 0))
    await completed(org, stays["Id"], tree.task(0, 0, 0))
    response = await world.client.delete(f"/team/{team['Id']}", headers=org.admin)
    assert response.status_code == 204, response.text
    assert await history(world.db, team["Id"]) == []
    assert len(await history(world.db, stays["Id"])) == 1
    board = (await world.client.get("/leaderboard", headers=org.member)).json()
    assert [e["TeamId"] for e in board] == [stays["Id"]]

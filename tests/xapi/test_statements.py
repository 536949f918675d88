"""Statements of completions, withdrawals and level and discipline completions, sent to
a real Ralph LRS on loopback and read back through its ``GET /xAPI/statements``."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from questline import events
from questline.config import Settings
from questline.events.models import Event
from questline.storage import tenancy
from questline.storage.db import utcnow
from questline.xapi.models import StatementKind, StatementStatus, XapiStatement
from questline.xapi.statements import statement_id
from tests.factories import World
from tests.progress.factories import at, complete, make_discipline
from tests.support.harness import AppHarness
from tests.support.ralph_lrs import RalphServer, RalphUser
from tests.xapi.support import count, deliver, fan_out, register, rows

pytestmark = pytest.mark.anyio

BASE = "https://questline.test/xapi/activities"
COMPLETED = "http://adlnet.gov/expapi/verbs/completed"
VOIDED = "http://adlnet.gov/expapi/verbs/voided"


async def test_completions_arrive_with_the_statement_shape(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team("Rockets")
    for email, name in (("ada@example.org", "Ada"), ("bob@example.org", "Bob")):
        added = await org.add_member(team["Id"], email=email, given_name=name)
        assert added.status_code == 201, added.text
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[10, 5]]], title="Crypto")
    first, second = tree.tasks
    assert (await complete(org, team["Id"], first, at(1))).status_code == 201
    assert (await complete(org, team["Id"], second, at(2))).status_code == 201

    await deliver(settings, app_state.db)

    stored = {s["id"]: s for s in ralph.statements(lrs_user)}
    made = await rows(app_state.db, org.id)
    assert [r.kind for r in made] == [
        StatementKind.TASK,
        StatementKind.TASK,
        StatementKind.LEVEL,
        StatementKind.DISCIPLINE,
    ]
    assert {str(r.id) for r in made} == set(stored)
    assert all(r.status is StatementStatus.SENT for r in made)
    # The id is derived from the event: the same on every retry.
    assert made[0].id == statement_id(made[0].event_id)
    assert made[2].id == statement_id(made[1].event_id, "level")

    task = stored[str(made[0].id)]
    group = {
        "objectType": "Group",
        "name": "Rockets",
        "account": {"homePage": "https://questline.test", "name": f"team/{team['Id']}"},
        "member": [
            {"objectType": "Agent", "name": "Ada", "mbox": "mailto:ada@example.org"},
            {"objectType": "Agent", "name": "Bob", "mbox": "mailto:bob@example.org"},
        ],
    }
    assert task["actor"] == group
    assert task["verb"]["id"] == COMPLETED
    assert task["object"]["id"] == f"{BASE}/task/{first}"
    assert task["object"]["definition"]["name"] == {"und": "T0.0.0"}
    assert task["result"]["score"] == {"raw": 10, "min": 0, "max": 10}
    assert task["context"]["team"] == group
    parents = [p["id"] for p in task["context"]["contextActivities"]["parent"]]
    assert parents == [
        f"{BASE}/quest/{tree.quest_ids[0][0]}",
        f"{BASE}/level/{tree.level_ids[0]}",
        f"{BASE}/discipline/{tree.id}",
    ]
    assert task["timestamp"].startswith(at(1).removesuffix("Z"))

    level = stored[str(made[2].id)]
    assert level["object"]["id"] == f"{BASE}/level/{tree.level_ids[0]}"
    assert level["result"]["score"] == {"raw": 15, "min": 0, "max": 15}
    assert level["timestamp"].startswith(at(2).removesuffix("Z"))
    discipline = stored[str(made[3].id)]
    assert discipline["object"]["id"] == f"{BASE}/discipline/{tree.id}"
    assert discipline["object"]["definition"]["name"] == {"und": "Crypto"}


async def test_each_level_completes_once_and_the_discipline_with_its_last_level(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team("Comets")
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[10]], [[5, 3]]])
    only, second_first, second_last = tree.tasks
    for index, task in enumerate((only, second_first, second_last)):
        assert (await complete(org, team["Id"], task, at(index + 1))).status_code == 201

    await deliver(settings, app_state.db)

    made = await rows(app_state.db, org.id)
    assert [(r.kind, r.level_id) for r in made] == [
        (StatementKind.TASK, tree.level_ids[0]),
        (StatementKind.LEVEL, tree.level_ids[0]),
        (StatementKind.TASK, tree.level_ids[1]),
        (StatementKind.TASK, tree.level_ids[1]),
        (StatementKind.LEVEL, tree.level_ids[1]),
        (StatementKind.DISCIPLINE, tree.level_ids[1]),
    ]
    assert {str(r.id) for r in made} == {s["id"] for s in ralph.statements(lrs_user)}


async def test_a_completion_by_a_named_member_has_that_member_as_actor(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team("Rockets")
    added = await org.add_member(team["Id"], email="ada@example.org", given_name="Ada")
    assert added.status_code == 201, added.text
    ada = added.json()["Id"]
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[10, 5]]])
    first, second = tree.tasks
    body = {"TaskId": first, "CompletedAt": at(1), "MemberId": ada}
    by_ada = await org.client.post(f"/team/{team['Id']}/progress", json=body, headers=org.admin)
    assert by_ada.status_code == 201, by_ada.text
    assert (await complete(org, team["Id"], second, at(2))).status_code == 201

    await deliver(settings, app_state.db)

    made = await rows(app_state.db, org.id)
    stored = {s["id"]: s for s in ralph.statements(lrs_user)}
    [by_member, by_nobody] = [stored[str(r.id)] for r in made if r.kind is StatementKind.TASK]
    assert by_member["actor"] == {
        "objectType": "Agent",
        "name": "Ada",
        "mbox": "mailto:ada@example.org",
    }
    assert by_member["context"]["team"]["account"]["name"] == f"team/{team['Id']}"
    assert by_nobody["actor"]["objectType"] == "Group"


async def test_a_withdrawal_voids_the_completion_and_what_it_completed(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team()
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[10]], [[3]]])
    task = tree.task(0, 0, 0)
    assert (await complete(org, team["Id"], task, at(1))).status_code == 201
    await deliver(settings, app_state.db)
    [completion, level] = await rows(app_state.db, org.id)
    assert level.kind is StatementKind.LEVEL  # the discipline has a second level

    withdrawn = await org.client.delete(f"/team/{team['Id']}/progress/{task}", headers=org.admin)
    assert withdrawn.status_code == 204, withdrawn.text
    await deliver(settings, app_state.db)

    stored = ralph.statements(lrs_user)
    voids = [s for s in stored if s["verb"]["id"] == VOIDED]
    assert sorted(v["object"]["id"] for v in voids) == sorted([str(completion.id), str(level.id)])
    assert all(v["object"]["objectType"] == "StatementRef" for v in voids)
    assert all(v["actor"]["account"]["name"] == f"team/{team['Id']}" for v in voids)


async def test_a_level_completed_withdrawn_and_completed_again_in_one_pass_stands_once(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team()
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[10]], [[3]]])
    task = tree.task(0, 0, 0)
    assert (await complete(org, team["Id"], task, at(1))).status_code == 201
    withdrawn = await org.client.delete(f"/team/{team['Id']}/progress/{task}", headers=org.admin)
    assert withdrawn.status_code == 204, withdrawn.text
    assert (await complete(org, team["Id"], task, at(2))).status_code == 201

    await deliver(settings, app_state.db)  # the three events in one pass

    made = await rows(app_state.db, org.id)
    assert [r.kind for r in made] == [
        StatementKind.TASK,
        StatementKind.LEVEL,
        StatementKind.VOIDED,
        StatementKind.VOIDED,
        StatementKind.TASK,
        StatementKind.LEVEL,
    ]
    standing = [r for r in made if r.kind is StatementKind.LEVEL and not r.voided]
    assert [r.id for r in standing] == [made[5].id]


async def test_a_retry_stores_nothing_twice(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team()
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[1, 2, 3]]])
    for hours, task in enumerate(tree.tasks[:2]):
        assert (await complete(org, team["Id"], task, at(hours))).status_code == 201
    await deliver(settings, app_state.db)
    before = ralph.statements(lrs_user)
    assert len(before) == 2

    # As if the process died after the LRS stored the batch, before it recorded so:
    # the lease ends and the same statements go again.
    with tenancy.acting_for(org.id):  # written directly: as the organization
        async with app_state.db.session() as session:
            await session.execute(
                update(XapiStatement)
                .where(XapiStatement.organization_id == org.id)
                .values(status=StatementStatus.PENDING, next_attempt_at=utcnow())
            )
    await deliver(settings, app_state.db)

    after = ralph.statements(lrs_user)
    assert sorted(s["id"] for s in after) == sorted(s["id"] for s in before)
    assert await count(app_state.db, StatementStatus.SENT, org.id) == 2


async def test_a_rolled_back_completion_sends_nothing(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team()
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[5]]])
    payload = {
        "TeamId": team["Id"],
        "TaskId": tree.tasks[0],
        "DisciplineId": str(tree.id),
        "Points": 5,
        "CompletedAt": at(1),
        "Score": 5,
    }

    async def failing_change() -> None:
        with tenancy.acting_for(org.id):
            async with app_state.db.session() as session:
                await events.record(
                    session, organization_id=org.id, type="progress.completed", data=payload
                )
                raise RuntimeError("the change fails after its event was recorded")

    with pytest.raises(RuntimeError):
        await failing_change()
    await deliver(settings, app_state.db)
    assert await rows(app_state.db, org.id) == []
    assert ralph.statements(lrs_user) == []

    # The same event, committed, is delivered.
    with tenancy.acting_for(org.id):
        async with app_state.db.session() as session:
            await events.record(
                session, organization_id=org.id, type="progress.completed", data=payload
            )
    await deliver(settings, app_state.db)
    [statement] = ralph.statements(lrs_user)
    assert statement["object"]["id"] == f"{BASE}/task/{tree.tasks[0]}"


async def test_a_refused_statement_is_shown_and_the_rest_are_delivered(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team()
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[1, 2, 3, 4]]])
    for hours, task in enumerate(tree.tasks[:3]):
        assert (await complete(org, team["Id"], task, at(hours))).status_code == 201
    await fan_out(settings, app_state.db)
    made = await rows(app_state.db, org.id)
    assert len(made) == 3
    # The LRS already holds a different statement with the second one's id: it refuses
    # the batch (409 Conflict), then that statement alone.
    bad = made[1]
    conflicting = {**bad.statement, "verb": {"id": "http://adlnet.gov/expapi/verbs/attempted"}}
    assert ralph.put(lrs_user, conflicting).status_code == 204

    await deliver(settings, app_state.db)

    stored = {s["id"]: s for s in ralph.statements(lrs_user)}
    assert str(made[0].id) in stored
    assert str(made[2].id) in stored
    assert stored[str(bad.id)]["verb"]["id"].endswith("attempted")
    failures = await org.client.get("/organization/xapi/failures", headers=org.admin)
    assert failures.status_code == 200, failures.text
    [failure] = failures.json()
    assert failure["StatementId"] == str(bad.id)
    assert failure["LastStatusCode"] == 409
    assert "Differing statements" in failure["LastError"]
    lrs = (await org.client.get("/organization/xapi", headers=org.admin)).json()
    assert (lrs["Pending"], lrs["Failed"]) == (0, 1)

    # Later statements still flow.
    assert (await complete(org, team["Id"], tree.tasks[3], at(5))).status_code == 201
    await deliver(settings, app_state.db)
    assert len(ralph.statements(lrs_user)) == 3 + 1 + 2  # + the task, level, discipline


async def test_each_organization_s_statements_go_to_its_own_lrs_only(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
    other_lrs_user: RalphUser,
) -> None:
    a, b, c = world.org(), world.org(), world.org()
    await register(a, ralph, lrs_user)
    await register(b, ralph, other_lrs_user)
    trees = {}
    for org in (a, b, c):
        team = await org.create_team()
        trees[org.id] = await make_discipline(app_state.db, org_id=org.id, shape=[[[1, 1]]])
        assert (await complete(org, team["Id"], trees[org.id].tasks[0])).status_code == 201
    await deliver(settings, app_state.db)

    for org, user in ((a, lrs_user), (b, other_lrs_user)):
        [statement] = ralph.statements(user)
        assert statement["object"]["id"] == f"{BASE}/task/{trees[org.id].tasks[0]}"
    assert await rows(app_state.db, c.id) == []
    # The routes see only the caller's organization.
    assert (await c.client.get("/organization/xapi", headers=c.admin)).status_code == 404
    assert (await c.client.get("/organization/xapi/failures", headers=c.admin)).status_code == 404
    got = (await b.client.get("/organization/xapi", headers=b.admin)).json()
    assert got["Username"] == other_lrs_user.username
    assert (await a.client.delete("/organization/xapi", headers=a.admin)).status_code == 204
    assert (await b.client.get("/organization/xapi", headers=b.admin)).status_code == 200


async def test_events_before_the_registration_are_not_sent(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[1, 1]]])
    assert (await complete(org, team["Id"], tree.tasks[0])).status_code == 201
    await register(org, ralph, lrs_user)
    await deliver(settings, app_state.db)
    assert ralph.statements(lrs_user) == []
    with tenancy.for_every_organization():
        async with app_state.db.session(write=False) as session:
            assert (await session.scalars(select(Event.id).where(Event.pending))).all() == []


async def test_an_adjustment_is_scored_and_its_withdrawal_voids_it(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    team = await org.create_team("Rockets")
    body = {"Points": -20, "Reason": "Shared a solution (rule 4).", "At": at(1)}
    made = await org.client.post(f"/team/{team['Id']}/adjustments", json=body, headers=org.admin)
    assert made.status_code == 201, made.text
    adjustment = made.json()["Id"]
    await deliver(settings, app_state.db)

    [scored] = ralph.statements(lrs_user)
    assert scored["verb"]["id"] == "http://adlnet.gov/expapi/verbs/scored"
    assert scored["actor"]["account"]["name"] == f"team/{team['Id']}"
    assert scored["object"]["id"] == f"{BASE}/adjustment/{adjustment}"
    assert scored["object"]["definition"]["name"] == {"und": "Shared a solution (rule 4)."}
    assert scored["result"]["score"] == {"raw": -20}
    assert scored["timestamp"].startswith(at(1).removesuffix("Z"))

    gone = await org.client.delete(
        f"/team/{team['Id']}/adjustments/{adjustment}", headers=org.admin
    )
    assert gone.status_code in (200, 204), gone.text
    await deliver(settings, app_state.db)

    voids = [s for s in ralph.statements(lrs_user) if s["verb"]["id"] == VOIDED]
    assert [v["object"] for v in voids] == [{"objectType": "StatementRef", "id": scored["id"]}]

"""The outbox: every change records its event, with the resource as the API returns it,
in the change's own transaction."""

from __future__ import annotations

from typing import Any

import pytest

from questline.events.models import PLATFORM_ORG
from tests.events.factories import listened_to, recorded
from tests.factories import World
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

DOCUMENT = {
    "Title": "Cloud",
    "Description": "Basics",
    "Levels": [
        {
            "Title": "L",
            "Quests": [{"Title": "Q", "Tasks": [{"Title": "A", "Points": 5}, {"Title": "B"}]}],
        }
    ],
}


async def test_every_change_records_its_event(world: World, app_state: AppHarness) -> None:
    org = world.org()
    await listened_to(org)  # the progress writes' events too (tests/progress: without)
    admin = org.admin
    client = org.client
    seen: dict[str, Any] = {}

    team = await org.create_team("Rockets")
    seen["team.created"] = team
    renamed = await client.patch(f"/team/{team['Id']}", json={"Name": "Comets"}, headers=admin)
    seen["team.updated"] = renamed.json()
    added = await org.add_member(team["Id"], email="ada@example.org")
    assert added.status_code == 201
    again = await org.add_member(team["Id"], email="ada@example.org")
    assert again.status_code == 200  # nothing changed: no event
    created = await client.post("/discipline", json=DOCUMENT, headers=admin)
    assert created.status_code == 201
    seen["discipline.created"] = created.json()
    task_id = created.json()["Levels"][0]["Quests"][0]["Tasks"][0]["Id"]
    done = await client.post(
        f"/team/{team['Id']}/progress", json={"TaskId": task_id}, headers=admin
    )
    seen["progress.completed"] = done.json()
    withdrawn = await client.delete(f"/team/{team['Id']}/progress/{task_id}", headers=admin)
    assert withdrawn.status_code == 204
    document = created.json()
    document["Title"] = "Cloud 2"
    replaced = await client.put(f"/discipline/{document['Id']}", json=document, headers=admin)
    assert replaced.status_code == 200, replaced.text
    seen["discipline.updated"] = replaced.json()
    removed = await client.delete(f"/team/{team['Id']}/members/{added.json()['Id']}", headers=admin)
    assert removed.status_code == 204
    switched = await client.post(f"/team/{team['Id']}/isadminteam", headers=admin)
    seen["team.admin_changed"] = switched.json()
    bulk = await client.post("/team/bulk", json=[{"name": "B1"}, {"name": "B2"}], headers=admin)
    assert bulk.status_code == 201
    seen["bulk.completed"] = bulk.json()
    deleted = await client.delete(f"/discipline/{document['Id']}", headers=admin)
    assert deleted.status_code == 204
    gone = await client.delete(f"/team/{team['Id']}", headers=admin)
    assert gone.status_code == 204

    events = await recorded(app_state)
    assert [e.type for e in events] == [
        "team.created",
        "team.updated",
        "member.added",
        "discipline.created",
        "progress.completed",
        "progress.withdrawn",
        "discipline.updated",
        "member.removed",
        "team.admin_changed",
        "bulk.completed",
        "discipline.deleted",
        "team.deleted",
    ]
    assert all(e.organization_id == org.id for e in events)
    by_type = {e.type: e.payload for e in events}
    for kind, body in seen.items():
        assert by_type[kind] == body, kind
    assert by_type["member.added"] == {"TeamId": team["Id"], "Member": added.json()}
    assert by_type["member.removed"]["Member"]["TeamIds"] == []
    assert by_type["progress.withdrawn"]["Score"] == 0
    assert by_type["progress.withdrawn"]["Points"] == 5
    assert by_type["team.deleted"]["Id"] == team["Id"]
    assert by_type["discipline.deleted"]["Title"] == "Cloud 2"


async def test_a_forced_removal_records_each_withdrawal(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    await listened_to(org)
    created = await org.client.post("/discipline", json=DOCUMENT, headers=org.admin)
    tasks = created.json()["Levels"][0]["Quests"][0]["Tasks"]
    team = await org.create_team()
    for task in tasks:
        response = await org.client.post(
            f"/team/{team['Id']}/progress", json={"TaskId": task["Id"]}, headers=org.admin
        )
        assert response.status_code == 201
    forced = await org.client.delete(
        f"/discipline/{created.json()['Id']}", params={"force": "true"}, headers=org.admin
    )
    assert forced.status_code == 204
    withdrawn = [e.payload for e in await recorded(app_state) if e.type == "progress.withdrawn"]
    assert sorted(w["TaskId"] for w in withdrawn) == sorted(t["Id"] for t in tasks)
    assert withdrawn[-1]["Score"] == 0


async def test_global_discipline_events_belong_to_every_organization(
    world: World, app_state: AppHarness
) -> None:
    from tests.factories import bearer

    operator = bearer(world.operator_token())
    created = await world.client.post("/discipline", json=DOCUMENT, headers=operator)
    assert created.status_code == 201, created.text
    [event] = await recorded(app_state)
    assert (event.type, event.organization_id) == ("discipline.created", PLATFORM_ORG)

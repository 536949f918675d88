"""PUT replaces the document, keeping the identity of the nodes sent with their Id."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines.models import Level, Quest, Resource, Task
from questline.progress import hooks
from questline.storage import tenancy
from questline.web.errors import Conflict
from tests.disciplines.factories import create_discipline, discipline_document, task_ids
from tests.factories import Org, World

pytestmark = pytest.mark.anyio


async def _read(world: World, org: Org, discipline_id: str) -> tuple[dict[str, Any], str]:
    response = await world.client.get(f"/discipline/{discipline_id}", headers=org.member)
    assert response.status_code == 200
    return response.json(), response.headers["ETag"]


async def _put(world: World, org: Org, discipline_id: str, body: Any, **headers: str) -> Any:
    return await world.client.put(
        f"/discipline/{discipline_id}", json=body, headers={**org.admin, **headers}
    )


async def _row_counts(world: World, discipline_id: str) -> list[int]:
    # The tree's rows, whichever organization's (row security).
    with tenancy.for_every_organization():
        async with world.db.session(write=False) as session:
            return [
                int(
                    await session.scalar(
                        select(func.count()).where(model.discipline_id == uuid.UUID(discipline_id))
                    )
                    or 0
                )
                for model in (Level, Quest, Task, Resource)
            ]


async def test_what_get_returned_can_be_put_back_unchanged(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=2, quests=2, tasks=2)
    tree, etag = await _read(world, org, created["Id"])
    response = await _put(world, org, created["Id"], tree, **{"If-Match": etag})
    assert response.status_code == 200, response.text
    after = response.json()
    assert response.headers["ETag"] != etag
    assert after["UpdatedAt"] >= tree["UpdatedAt"]
    assert {k: v for k, v in after.items() if k != "UpdatedAt"} == {
        k: v for k, v in tree.items() if k != "UpdatedAt"
    }
    assert (await _read(world, org, created["Id"]))[0] == after


async def test_put_keeps_ids_moves_renames_adds_and_removes(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=3, quests=2, tasks=2)
    tree, etag = await _read(world, org, created["Id"])
    edited = copy.deepcopy(tree)
    removed_level = edited["Levels"].pop(2)
    level0, level1 = edited["Levels"]
    level0["Quests"].reverse()
    for quest_order, quest in enumerate(level0["Quests"]):
        quest["Order"] = quest_order
    moved_task = level1["Quests"][0]["Tasks"].pop(0)
    moved_task["Title"] = "Moved and renamed"
    moved_task["Points"] = 99
    level0["Quests"][0]["Tasks"].append({**moved_task, "Order": 2})
    for task_order, task in enumerate(level1["Quests"][0]["Tasks"]):
        task["Order"] = task_order
    level1["Quests"].append({"Title": "Brand new", "Tasks": [{"Title": "New task"}]})
    edited["Resources"][0]["Url"] = "https://example.org/changed"
    edited["Color"] = "red"
    response = await _put(world, org, created["Id"], edited, **{"If-Match": etag})
    assert response.status_code == 200, response.text
    after = response.json()
    assert after["Color"] == "Red"
    assert [lv["Id"] for lv in after["Levels"]] == [level0["Id"], level1["Id"]]
    assert [q["Id"] for q in after["Levels"][0]["Quests"]] == [
        tree["Levels"][0]["Quests"][1]["Id"],
        tree["Levels"][0]["Quests"][0]["Id"],
    ]
    landed = after["Levels"][0]["Quests"][0]["Tasks"][2]
    assert landed["Id"] == moved_task["Id"]
    assert (landed["Title"], landed["Points"], landed["Order"]) == ("Moved and renamed", 99, 2)
    new_quest = after["Levels"][1]["Quests"][2]
    assert new_quest["Title"] == "Brand new"
    assert uuid.UUID(new_quest["Id"]) not in {uuid.UUID(i) for i in task_ids(tree)}
    assert after["Resources"][0]["Id"] == tree["Resources"][0]["Id"]
    assert after["Resources"][0]["Url"] == "https://example.org/changed"
    kept = set(task_ids(tree)) - {t["Id"] for q in removed_level["Quests"] for t in q["Tasks"]}
    assert kept <= set(task_ids(after))
    assert (await _read(world, org, created["Id"]))[0] == after
    # 2 levels; 2 + 3 quests; 8 kept tasks + 1 new; one resource on every old node kept
    assert await _row_counts(world, created["Id"]) == [2, 5, 9, 1 + 2 + 4 + 8]
    summary = (await world.client.get("/discipline", headers=org.member)).json()[0]
    assert (summary["LevelCount"], summary["QuestCount"], summary["TaskCount"]) == (2, 5, 9)


async def test_put_with_an_empty_tree_removes_every_node(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=2)
    response = await _put(world, org, created["Id"], {"Title": "Only", "Description": "D"})
    assert response.status_code == 200
    assert response.json()["Levels"] == []
    assert response.json()["Color"] is None
    assert await _row_counts(world, created["Id"]) == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("where", "make_id"),
    [
        ("unknown", lambda tree, other: str(uuid.uuid4())),
        (
            "task id on a level",
            lambda tree, other: tree["Levels"][0]["Quests"][0]["Tasks"][0]["Id"],
        ),
        ("another discipline's level", lambda tree, other: other["Levels"][0]["Id"]),
    ],
)
async def test_an_id_that_is_not_a_node_of_this_kind_is_422_naming_its_path(
    world: World, where: str, make_id: Any
) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=2)
    other = await create_discipline(world.client, org.admin, levels=1)
    tree, etag = await _read(world, org, created["Id"])
    edited = copy.deepcopy(tree)
    edited["Levels"][1]["Id"] = make_id(tree, other)
    response = await _put(world, org, created["Id"], edited)
    assert response.status_code == 422, where
    assert [e["field"] for e in response.json()["errors"]] == ["Levels[1].Id"]
    assert await _read(world, org, created["Id"]) == (tree, etag)


async def test_an_id_given_twice_is_422(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=1, quests=1, tasks=2)
    tree, etag = await _read(world, org, created["Id"])
    edited = copy.deepcopy(tree)
    tasks = edited["Levels"][0]["Quests"][0]["Tasks"]
    tasks[1]["Id"] = tasks[0]["Id"]
    response = await _put(world, org, created["Id"], edited)
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["Levels[0].Quests[0].Tasks[1].Id"]
    assert await _read(world, org, created["Id"]) == (tree, etag)


async def test_read_only_fields_must_be_this_disciplines(world: World) -> None:
    org, other = world.org(), world.org()
    created = await create_discipline(world.client, org.admin, levels=1)
    tree, etag = await _read(world, org, created["Id"])
    for field, value in (("Id", str(uuid.uuid4())), ("OrganizationId", str(other.id))):
        response = await _put(world, org, created["Id"], {**tree, field: value})
        assert response.status_code == 422
        assert [e["field"] for e in response.json()["errors"]] == [field]
    wrong_order = copy.deepcopy(tree)
    wrong_order["Levels"][0]["Order"] = 5
    response = await _put(world, org, created["Id"], wrong_order)
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["Levels[0].Order"]
    assert await _read(world, org, created["Id"]) == (tree, etag)


async def test_invalid_put_document_names_the_path_and_changes_nothing(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=2, quests=1, tasks=3)
    tree, etag = await _read(world, org, created["Id"])
    edited = copy.deepcopy(tree)
    del edited["Levels"][1]["Quests"][0]["Tasks"][2]["Title"]
    edited["Color"] = "Blue"
    response = await _put(world, org, created["Id"], edited)
    assert response.status_code == 422
    assert sorted(e["field"] for e in response.json()["errors"]) == [
        "Color",
        "Levels[1].Quests[0].Tasks[2].Title",
    ]
    assert await _read(world, org, created["Id"]) == (tree, etag)


async def test_stale_if_match_is_412_and_changes_nothing(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=1)
    tree, etag = await _read(world, org, created["Id"])
    first = await _put(world, org, created["Id"], {**tree, "Title": "One"}, **{"If-Match": etag})
    assert first.status_code == 200
    stale = await _put(world, org, created["Id"], {**tree, "Title": "Two"}, **{"If-Match": etag})
    assert stale.status_code == 412
    assert (await _read(world, org, created["Id"]))[0]["Title"] == "One"
    gone = await world.client.delete(
        f"/discipline/{created['Id']}", headers={**org.admin, "If-Match": etag}
    )
    assert gone.status_code == 412
    assert (await _read(world, org, created["Id"]))[0]["Title"] == "One"


async def test_two_concurrent_puts_with_one_etag_one_wins(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=3, quests=3, tasks=3)
    tree, etag = await _read(world, org, created["Id"])
    left = {**copy.deepcopy(tree), "Title": "Left"}
    right = {**copy.deepcopy(tree), "Title": "Right", "Levels": tree["Levels"][:1]}
    responses = await asyncio.gather(
        *(_put(world, org, created["Id"], body, **{"If-Match": etag}) for body in (left, right))
    )
    assert sorted(r.status_code for r in responses) == [200, 412], [r.text for r in responses]
    winner = next(r for r in responses if r.status_code == 200).json()
    after, new_etag = await _read(world, org, created["Id"])
    assert after == winner
    assert new_etag == next(r for r in responses if r.status_code == 200).headers["ETag"]
    expected_levels = 3 if winner["Title"] == "Left" else 1
    assert (await _row_counts(world, created["Id"]))[0] == expected_levels


class HookLog:
    def __init__(self) -> None:
        self.calls: list[tuple[uuid.UUID, list[uuid.UUID], bool]] = []
        self.refuse = False

    async def __call__(
        self,
        session: AsyncSession,
        *,
        discipline_id: uuid.UUID,
        task_ids: Sequence[uuid.UUID],
        force: bool,
    ) -> None:
        self.calls.append((discipline_id, list(task_ids), force))
        if self.refuse and not force:
            raise Conflict("Teams completed some of these tasks.")


@pytest.fixture
def hook_log(app: FastAPI) -> HookLog:
    """Stands in for progress's hook, which the application hands to the discipline
    domain (``app.state.tasks_removed``)."""
    assert app.state.tasks_removed is hooks.before_tasks_removed
    log = HookLog()
    app.state.tasks_removed = log
    return log


async def test_put_offers_removed_tasks_to_the_progress_hook(
    world: World, hook_log: HookLog
) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=2, quests=1, tasks=2)
    tree, _ = await _read(world, org, created["Id"])
    unchanged = await _put(world, org, created["Id"], tree)
    assert unchanged.status_code == 200
    assert hook_log.calls == [], "no task removed, nothing to ask"
    hook_log.refuse = True
    edited = {**tree, "Levels": tree["Levels"][:1]}
    refused = await _put(world, org, created["Id"], edited)
    assert refused.status_code == 409
    assert (await _read(world, org, created["Id"]))[0]["Levels"] == tree["Levels"]
    forced = await world.client.put(
        f"/discipline/{created['Id']}?force=true", json=edited, headers=org.admin
    )
    assert forced.status_code == 200
    removed = {uuid.UUID(t["Id"]) for q in tree["Levels"][1]["Quests"] for t in q["Tasks"]}
    assert [(d, set(ids), f) for d, ids, f in hook_log.calls] == [
        (uuid.UUID(created["Id"]), removed, False),
        (uuid.UUID(created["Id"]), removed, True),
    ]


async def test_delete_offers_every_task_to_the_hook_and_removes_the_tree(
    world: World, hook_log: HookLog
) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=2, quests=2, tasks=2)
    url = f"/discipline/{created['Id']}"
    hook_log.refuse = True
    assert (await world.client.delete(url, headers=org.admin)).status_code == 409
    assert (await world.client.get(url, headers=org.member)).status_code == 200
    assert (await world.client.delete(f"{url}?force=true", headers=org.admin)).status_code == 204
    assert [set(ids) for _, ids, _ in hook_log.calls] == [
        {uuid.UUID(i) for i in task_ids(created)}
    ] * 2
    assert [f for _, _, f in hook_log.calls] == [False, True]
    assert (await world.client.get(url, headers=org.member)).status_code == 404
    assert (await world.client.delete(url, headers=org.admin)).status_code == 404
    assert await _row_counts(world, created["Id"]) == [0, 0, 0, 0]
    assert (await world.client.get("/discipline", headers=org.member)).json() == []


async def test_delete_of_an_empty_discipline_does_not_call_the_hook(
    world: World, hook_log: HookLog
) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=0)
    etag = (await _read(world, org, created["Id"]))[1]
    response = await world.client.delete(
        f"/discipline/{created['Id']}", headers={**org.admin, "If-Match": etag}
    )
    assert response.status_code == 204
    assert hook_log.calls == []


async def test_put_document_fields_are_the_post_ones(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, levels=1)
    body = discipline_document(levels=1, color="GREEN")
    response = await _put(world, org, created["Id"], body)
    assert response.status_code == 200
    assert response.json()["Color"] == "Green"
    assert response.json()["Levels"][0]["Id"] != created["Levels"][0]["Id"]

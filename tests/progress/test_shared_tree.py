"""The overview's discipline tree is kept once for every organization that sees the same
disciplines at the same versions (``discipline_tree.shared_tree``): another organization's
first overview reads the disciplines' versions, not the tree again; a changed
discipline is never drawn from the old tree."""

from __future__ import annotations

from typing import Any

import pytest

from tests.disciplines.factories import discipline_document
from tests.factories import Org, World, bearer
from tests.progress.test_overview import counting_statements
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def _overview(world: World, org: Org, team: dict[str, Any]) -> Any:
    answer = await world.client.get(f"/team/{team['Id']}/overview", headers=org.member)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_a_second_organization_reuses_the_tree_until_a_discipline_changes(
    world: World, app_state: AppHarness
) -> None:
    operator = bearer(world.operator_token())
    made = await world.client.post(
        "/discipline", json=discipline_document(levels=2, quests=2, tasks=2), headers=operator
    )
    assert made.status_code == 201, made.text
    first, second = world.org(), world.org()
    first_team, second_team = await first.create_team("One"), await second.create_team("Two")
    await _overview(world, first, first_team)

    app_state.readmodel.cache.drop_bodies()
    with counting_statements(app_state) as sent:
        shared = await _overview(world, second, second_team)
    assert any("disciplines.version" in s for s in sent), sent
    assert not any("FROM levels" in s or "FROM quests" in s for s in sent), sent

    # The tree it drew is the one a build from nothing draws.
    app_state.readmodel.cache.drop_bodies()
    app_state.readmodel.forget_memos()
    assert await _overview(world, second, second_team) == shared

    # One more task in the discipline: a new version, a new tree, for both.
    document = made.json()
    document["Levels"][0]["Quests"][0]["Tasks"].append({"Title": "One more", "Points": 7})
    replaced = await world.client.put(
        f"/discipline/{document['Id']}", json=document, headers=operator
    )
    assert replaced.status_code == 200, replaced.text
    changed = await _overview(world, second, second_team)
    assert changed != shared
    app_state.readmodel.cache.drop_bodies()
    app_state.readmodel.forget_memos()
    assert await _overview(world, second, second_team) == changed
    assert (await _overview(world, first, first_team))["Disciplines"] == changed["Disciplines"]

"""The overview's ``PendingSubmission``: the team's submission waiting for review, per
task, as the route and the read model answer it, following each decision."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import World
from tests.submissions.support import learner, review_discipline, submitted

pytestmark = pytest.mark.anyio


def pending_of(overview: dict[str, Any], discipline_id: str) -> dict[str, str | None]:
    [discipline] = [d for d in overview["Disciplines"] if d["DisciplineId"] == discipline_id]
    return {
        task["TaskId"]: task["PendingSubmission"]
        for level in discipline["Levels"]
        for quest in level["Quests"]
        for task in quest["Tasks"]
    }


async def test_the_overview_shows_the_pending_submission(world: World) -> None:
    org = world.org()
    discipline_id, tasks = await review_discipline(org)
    team = await org.create_team()
    other_team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    cy = await learner(world, org, other_team["Id"], "Cy")
    url = f"/team/{team['Id']}/overview"

    async def pending() -> dict[str, str | None]:
        seen = []
        for headers in (ada.headers, org.admin, cy.headers, ada.headers):
            response = await world.client.get(url, headers=headers)  # route, then read model
            assert response.status_code == 200, response.text
            seen.append(pending_of(response.json(), discipline_id))
        assert all(s == seen[0] for s in seen)
        return seen[0]

    assert await pending() == {tasks[0]: None, tasks[1]: None}
    first = await submitted(world.client, team["Id"], ada, tasks[0])
    await submitted(world.client, other_team["Id"], cy, tasks[1])  # another team's
    assert await pending() == {tasks[0]: first["Id"], tasks[1]: None}
    await world.client.post(
        f"/submission/{first['Id']}/reject", json={"Comment": "Again."}, headers=org.admin
    )
    assert await pending() == {tasks[0]: None, tasks[1]: None}
    second = await submitted(world.client, team["Id"], ada, tasks[0])
    assert await pending() == {tasks[0]: second["Id"], tasks[1]: None}
    await world.client.post(f"/submission/{second['Id']}/approve", headers=org.admin)
    assert await pending() == {tasks[0]: None, tasks[1]: None}
    overview = (await world.client.get(url, headers=ada.headers)).json()
    [discipline] = [d for d in overview["Disciplines"] if d["DisciplineId"] == discipline_id]
    assert discipline["TasksCompleted"] == 1


def test_the_overview_reads_the_pending_state_as_stored() -> None:
    from questline.learners.pending import PENDING
    from questline.submissions.models import SubmissionState

    assert SubmissionState.PENDING.value == PENDING

"""`GET /team/{id}/overview`: each task's state for the team (kind, completed, locked,
attempts left, pending submission, unlocked hints), for members and admins alike."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import World
from tests.learners.factories import learners_game

pytestmark = pytest.mark.anyio


def task_states(overview: dict[str, Any], discipline_id: str) -> dict[str, dict[str, Any]]:
    [discipline] = [d for d in overview["Disciplines"] if d["DisciplineId"] == discipline_id]
    return {
        task["Title"]: task
        for level in discipline["Levels"]
        for quest in level["Quests"]
        for task in quest["Tasks"]
    }


async def test_each_task_shows_the_teams_state(world: World) -> None:
    game = await learners_game(world, sequential=True)
    url = f"/team/{game.team_id}/overview"
    await game.attempt(game.alice, "Answer task", "wrong")
    await game.hint(game.alice, "Answer task", 1)
    await game.complete(game.bob, "Self task")
    for headers in (game.alice, game.org.admin, game.org.member):
        for _ in range(2):  # the route's answer, then the read model's
            overview = await game.client.get(url, headers=headers)
            assert overview.status_code == 200, overview.text
            states = task_states(overview.json(), game.discipline["Id"])
            answer = states["Answer task"]
            assert answer["Check"] == "Answer"
            assert answer["AttemptsLeft"] == 2
            assert answer["UnlockedHints"] == [1]
            assert answer["Completed"] is False
            assert answer["PendingSubmission"] is None
            assert states["Self task"]["Completed"] is True
            assert states["Review task"]["Check"] == "Review"
            assert [states[t]["Locked"] for t in ("Admin task", "Later self")] == [False, True]
            assert states["Later self"]["AttemptsLeft"] is None
            assert "Secret hint text" not in overview.text
    # Completing the first level opens the second.
    for title in ("Admin task", "Review task"):
        await game.complete(game.org.admin, title)
    await game.attempt(game.alice, "Answer task", "Hunter2")
    overview = await game.client.get(url, headers=game.alice)
    states = task_states(overview.json(), game.discipline["Id"])
    assert states["Later self"]["Locked"] is False
    assert states["Answer task"]["AttemptsLeft"] == 1


async def test_a_wrong_answer_renews_the_cached_attempts_left(world: World) -> None:
    game = await learners_game(world, max_attempts=3)
    url = f"/team/{game.team_id}/overview"

    async def left() -> int:
        overview = await game.client.get(url, headers=game.alice)
        assert overview.status_code == 200, overview.text
        return int(
            task_states(overview.json(), game.discipline["Id"])["Answer task"]["AttemptsLeft"]
        )

    assert [await left(), await left()] == [3, 3]  # the route's answer, then the cache's
    assert (await game.attempt(game.alice, "Answer task", "wrong")).status_code == 200
    assert await left() == 2
    assert (await game.attempt(game.bob, "Answer task", "wrong again")).status_code == 200
    assert await left() == 1

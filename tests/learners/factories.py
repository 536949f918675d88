"""A team with members who act themselves, and a discipline of every check kind.

game = await learners_game(world)
await game.attempt(game.alice, game.answer_task, "Hunter2")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from questline.web.identity import Role
from tests.factories import Org, World, bearer, unique

ANSWER = "Hunter2"
"""The Exact answer of the game's answer task."""


def game_document(*, sequential: bool = False, max_attempts: int | None = 3) -> dict[str, Any]:
    answer_check: dict[str, Any] = {
        "Kind": "Answer",
        "Answers": [
            {"Value": ANSWER},
            {"Value": "Sesame", "Match": "IgnoreCase"},
            {"Value": "flag\\{[a-z]+\\}", "Match": "Regex"},
        ],
    }
    if max_attempts is not None:
        answer_check["MaxAttempts"] = max_attempts
    return {
        "Title": unique("Game"),
        "Description": "Every way to complete a task.",
        "Sequential": sequential,
        "Levels": [
            {
                "Title": "First",
                "Quests": [
                    {
                        "Title": "Q1",
                        "Tasks": [
                            {"Title": "Admin task", "Points": 5},
                            {"Title": "Self task", "Points": 7, "Check": {"Kind": "Self"}},
                            {
                                "Title": "Answer task",
                                "Points": 20,
                                "Check": answer_check,
                                "Hints": [
                                    {"Text": "Secret hint text", "Cost": 4},
                                    {"Text": "Free hint text", "Cost": 0},
                                ],
                            },
                            {"Title": "Review task", "Points": 9, "Check": {"Kind": "Review"}},
                        ],
                    }
                ],
            },
            {
                "Title": "Second",
                "Quests": [
                    {
                        "Title": "Q2",
                        "Tasks": [
                            {"Title": "Later self", "Points": 3, "Check": {"Kind": "Self"}},
                            {
                                "Title": "Later answer",
                                "Points": 3,
                                "Check": {"Kind": "Answer", "Answers": [{"Value": "later"}]},
                                "Hints": [{"Text": "Later hint", "Cost": 1}],
                            },
                        ],
                    }
                ],
            },
        ],
    }


@dataclass
class Game:
    org: Org
    client: httpx.AsyncClient
    discipline: dict[str, Any]
    team_id: str
    alice: dict[str, str]
    bob: dict[str, str]
    alice_id: str
    bob_id: str
    outsider: dict[str, str]
    """A member of the organization in another team."""

    def task(self, title: str) -> str:
        for level in self.discipline["Levels"]:
            for quest in level["Quests"]:
                for task in quest["Tasks"]:
                    if task["Title"] == title:
                        return str(task["Id"])
        raise KeyError(title)

    async def attempt(
        self, headers: dict[str, str], task_title: str, answer: str, team_id: str | None = None
    ) -> httpx.Response:
        return await self.client.post(
            f"/team/{team_id or self.team_id}/attempts",
            json={"TaskId": self.task(task_title), "Answer": answer},
            headers=headers,
        )

    async def hint(
        self, headers: dict[str, str], task_title: str, index: int, team_id: str | None = None
    ) -> httpx.Response:
        return await self.client.post(
            f"/team/{team_id or self.team_id}/hints",
            json={"TaskId": self.task(task_title), "Index": index},
            headers=headers,
        )

    async def complete(
        self, headers: dict[str, str], task_title: str, team_id: str | None = None
    ) -> httpx.Response:
        return await self.client.post(
            f"/team/{team_id or self.team_id}/progress",
            json={"TaskId": self.task(task_title)},
            headers=headers,
        )

    async def score(self) -> int:
        team = await self.client.get(f"/team/{self.team_id}", headers=self.org.admin)
        return int(team.json()["Score"])


async def learners_game(world: World, **document: Any) -> Game:
    org = world.org()
    made = await world.client.post("/discipline", json=game_document(**document), headers=org.admin)
    assert made.status_code == 201, made.text
    team = await org.create_team()
    other_team = await org.create_team()
    people: list[tuple[dict[str, str], str]] = []
    for team_id in (team["Id"], team["Id"], other_team["Id"]):
        email = f"{unique('learner')}@example.org"
        added = await org.add_member(team_id, email=email)
        assert added.status_code == 201, added.text
        token = world.tokens.mint(
            role=Role.MEMBER, org_id=org.id, subject=unique("sub"), email=email
        )
        people.append((bearer(token), added.json()["Id"]))
    return Game(
        org=org,
        client=world.client,
        discipline=made.json(),
        team_id=team["Id"],
        alice=people[0][0],
        bob=people[1][0],
        alice_id=people[0][1],
        bob_id=people[1][1],
        outsider=people[2][0],
    )

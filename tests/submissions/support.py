"""Helpers of the submission tests: a discipline with review tasks, a team with members
who sign in with their e-mail, and the calls they make."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from questline.web.identity import Role
from tests.factories import Org, World, bearer, unique


async def review_discipline(
    org: Org, kinds: list[str] | None = None, *, sequential: bool = False
) -> tuple[str, list[str]]:
    """A discipline of the organization: one level with one task per kind (default two
    `Review` tasks of 10 and 20 points); its id and the tasks' ids."""
    kinds = kinds or ["Review", "Review"]
    tasks = [
        {"Title": f"Build part {i}", "Points": 10 * (i + 1), "Check": {"Kind": kind}}
        for i, kind in enumerate(kinds)
    ]
    body: dict[str, Any] = {
        "Title": unique("Robotics"),
        "Description": "x",
        "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": tasks}]}],
    }
    if sequential:
        body["Sequential"] = True
    created = await org.client.post("/discipline", json=body, headers=org.admin)
    assert created.status_code == 201, created.text
    document = created.json()
    return document["Id"], [t["Id"] for t in document["Levels"][0]["Quests"][0]["Tasks"]]


@dataclass
class Learner:
    """A member of a team, signed in with its e-mail (a token's ``email`` claim)."""

    id: str
    email: str
    headers: dict[str, str]


def token_for(world: World, org: Org, email: str, role: Role = Role.MEMBER) -> dict[str, str]:
    return bearer(world.tokens.mint(role=role, org_id=org.id, subject=email, email=email))


async def learner(world: World, org: Org, team_id: str, name: str = "Ada") -> Learner:
    email = f"{unique(name.lower())}@example.org"
    added = await org.add_member(team_id, email=email, given_name=name)
    assert added.status_code == 201, added.text
    return Learner(added.json()["Id"], email, token_for(world, org, email))


async def submit(
    client: httpx.AsyncClient, team_id: str, who: Learner, task_id: str, **work: Any
) -> httpx.Response:
    body = {"TaskId": task_id, **(work or {"Text": "Done: see the photo."})}
    return await client.post(f"/team/{team_id}/submissions", json=body, headers=who.headers)


async def submitted(
    client: httpx.AsyncClient, team_id: str, who: Learner, task_id: str, **work: Any
) -> dict[str, Any]:
    response = await submit(client, team_id, who, task_id, **work)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def score_of(org: Org, team_id: str) -> int:
    response = await org.client.get(f"/team/{team_id}", headers=org.admin)
    return int(response.json()["Score"])

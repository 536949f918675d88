"""PostgreSQL under concurrent writes and reads: zero 5xx, consistent documents.

Clients record and withdraw completions, replace a discipline with ``force`` (removing
tasks teams completed and adding new ones), create and delete teams, while others read
the progress graphs and the discipline document. Before the fix this gave 500s
(deadlocks between a forced replacement and completions; a ``KeyError`` in the graph
builder from a read that mixed states) and torn discipline documents.
"""

from __future__ import annotations

import asyncio
import copy
import random
from typing import Any

import httpx
import pytest

from tests.conftest import BACKENDS
from tests.disciplines.factories import create_discipline, task_ids
from tests.factories import Org, World

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.postgres_only,
    pytest.mark.skipif("postgresql" not in BACKENDS, reason="PostgreSQL backend not selected"),
]

ROUNDS = 12


def _state(document: dict[str, Any]) -> tuple[str, frozenset[str]]:
    return document["Title"], frozenset(task_ids(document))


class Run:
    def __init__(self, world: World, org: Org, discipline: dict[str, Any]) -> None:
        self.client = world.client
        self.org = org
        self.discipline = discipline
        self.id = discipline["Id"]
        self.written = {_state(discipline)}
        self.read: list[tuple[str, frozenset[str]]] = []
        self.statuses: list[tuple[str, int, str]] = []
        self.teams: list[str] = []
        self.done = False

    def note(self, label: str, response: httpx.Response) -> httpx.Response:
        self.statuses.append((label, response.status_code, response.text[:300]))
        return response

    async def replacer(self) -> None:
        for round_ in range(ROUNDS):
            document = copy.deepcopy(self.discipline)
            quests = document["Levels"][0]["Quests"]
            if quests[0]["Tasks"]:
                quests[0]["Tasks"].pop()
            quests[1]["Tasks"].append(
                {"Title": f"New {round_}", "Description": "", "Points": 5, "Resources": []}
            )
            document["Title"] = f"Round {round_}"
            body = {k: v for k, v in document.items() if k not in ("Id", "CreatedAt")}
            response = self.note(
                "replace",
                await self.client.put(
                    f"/discipline/{self.id}?force=true", json=body, headers=self.org.admin
                ),
            )
            if response.status_code == 200:
                self.discipline = response.json()
                self.written.add(_state(self.discipline))
            await asyncio.sleep(0.01)
        self.done = True

    async def completer(self, seed: int) -> None:
        chance = random.Random(seed)
        while not self.done:
            if not self.teams:
                await asyncio.sleep(0.01)
                continue
            team = chance.choice(self.teams)
            task = chance.choice(task_ids(self.discipline))
            path = f"/team/{team}/progress"
            self.note(
                "complete",
                await self.client.post(path, json={"TaskId": task}, headers=self.org.admin),
            )
            if chance.random() < 0.4:
                self.note(
                    "withdraw",
                    await self.client.delete(f"{path}/{task}", headers=self.org.admin),
                )

    async def churn(self) -> None:
        count = 0
        while not self.done:
            count += 1
            created = self.note(
                "create team",
                await self.client.post(
                    "/team", json={"name": f"Churn {count}"}, headers=self.org.admin
                ),
            )
            if created.status_code == 201:
                await asyncio.sleep(0.02)
                self.note(
                    "delete team",
                    await self.client.delete(
                        f"/team/{created.json()['Id']}", headers=self.org.admin
                    ),
                )

    async def reader(self) -> None:
        while not self.done:
            graph = self.note(
                "graph", await self.client.get("/leaderboard/graph", headers=self.org.member)
            )
            assert graph.status_code < 500
            document = self.note(
                "document",
                await self.client.get(f"/discipline/{self.id}", headers=self.org.member),
            )
            if document.status_code == 200:
                self.read.append(_state(document.json()))


async def test_concurrent_writes_and_reads_give_no_5xx_and_whole_documents(
    world: World,
) -> None:
    org = world.org()
    discipline = await create_discipline(
        world.client, org.admin, levels=1, quests=2, tasks=4, resources=0
    )
    run = Run(world, org, discipline)
    for index in range(5):
        run.teams.append((await org.create_team(f"Steady {index}"))["Id"])
    await asyncio.gather(
        run.replacer(),
        *(run.completer(seed) for seed in range(4)),
        run.churn(),
        run.reader(),
        run.reader(),
    )
    server_errors = [s for s in run.statuses if s[1] >= 500]
    assert server_errors == [], server_errors[:5]
    replaced = [s for s in run.statuses if s[0] == "replace"]
    assert {s[1] for s in replaced} == {200}, replaced[:3]
    assert run.read, "the readers read"
    torn = [state for state in run.read if state not in run.written]
    assert torn == [], f"{len(torn)} of {len(run.read)} documents mixed two states"
    completions = [s for s in run.statuses if s[0] == "complete"]
    assert any(s[1] in (200, 201) for s in completions)

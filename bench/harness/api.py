"""Set-up the probes make through a running service's API, as an organization's admin."""

from __future__ import annotations

import httpx


async def one_level_discipline(client: httpx.AsyncClient, points: list[int]) -> list[str]:
    """A discipline of one level and one quest with a task of each of ``points``; the
    tasks' ids, in order."""
    tasks = [{"Title": f"T{index}", "Points": value} for index, value in enumerate(points)]
    created = await client.post(
        "/discipline",
        json={
            "Title": "Bench",
            "Description": "x",
            "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": tasks}]}],
        },
    )
    assert created.status_code == 201, created.text
    return [task["Id"] for task in created.json()["Levels"][0]["Quests"][0]["Tasks"]]

"""Helpers of the season tests: times, and seasons made through the API."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import select

from questline.progress.models import ScoreEvent
from questline.storage import tenancy
from questline.storage.db import Database
from tests.factories import Org


def iso(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def create_season(org: Org, **fields: Any) -> dict[str, Any]:
    start = now() - dt.timedelta(days=30)
    body: dict[str, Any] = {
        "Name": "Winter cup",
        "StartsAt": iso(start),
        "EndsAt": iso(now() + dt.timedelta(days=30)),
        **fields,
    }
    response = await org.client.post("/season", json=body, headers=org.admin)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def create_task(org: Org, points: list[int], title: str = "D") -> tuple[str, list[str]]:
    """A discipline of the organization with one task per entry of ``points``: its id and
    the tasks' ids."""
    body = {
        "Title": title,
        "Description": "x",
        "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [
            {"Title": f"T{i}", "Points": p} for i, p in enumerate(points)
        ]}]}],
    }  # fmt: skip
    created = await org.client.post("/discipline", json=body, headers=org.admin)
    assert created.status_code == 201, created.text
    document = created.json()
    tasks = [t["Id"] for t in document["Levels"][0]["Quests"][0]["Tasks"]]
    return document["Id"], tasks


async def complete(
    org: Org, team_id: str, task_id: str, at: dt.datetime | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"TaskId": task_id, **extra}
    if at is not None:
        body["CompletedAt"] = iso(at)
    response = await org.client.post(f"/team/{team_id}/progress", json=body, headers=org.admin)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def recorded_instants(db: Database, org_id: uuid.UUID) -> list[dt.datetime]:
    """When each step of the organization's score history was recorded, in order (read
    acting for it: row-level security, ``QUESTLINE_TEST_ROW_SECURITY``)."""
    with tenancy.acting_for(org_id):
        async with db.session(write=False) as session:
            rows = await session.execute(
                select(ScoreEvent.recorded_at)
                .where(ScoreEvent.organization_id == org_id)
                .order_by(ScoreEvent.recorded_at, ScoreEvent.id)
            )
            return list(rows.scalars())


WINDOWS = (1.5, 3.0, 6.0, 12.0, 24.0, 48.0)
"""Seconds from a test's start to the instant it crosses (a freeze, an end). A test
whose steps before an instant took longer than its window (a loaded machine) starts
again with a new organization and the next window: no step is bounded in time."""


class Overran(Exception):
    """The steps meant to run before an instant ran past it."""


def still_before(instant: dt.datetime) -> None:
    if now() >= instant:
        raise Overran(iso(instant))


async def in_time(run: Callable[[float], Awaitable[None]]) -> None:
    """``run`` with the first window its steps keep to."""
    for window in WINDOWS:
        try:
            await run(window)
        except Overran:
            continue
        return
    raise AssertionError(f"the steps before an instant overran each window {WINDOWS}")

"""The shape of the benchmark's dataset, as rules the database and Python both follow.

One organization holds every team (the worst case for one tenant's leaderboard).
Team ``n`` has 3 members; every 100th team is an admin team. The organization has
the demo's three disciplines (3 levels x 2 quests x 3 tasks each). Team ``n``
completed the 20 tasks ``(7n + 5k) mod T`` for ``k = 0..19`` (task ``i`` is the i-th
task of the tree, ``T`` tasks in all), task ``k`` at
``EPOCH + 2k days + (37n mod 1 day) seconds``, so teams differ in what they did, in
their scores and in when they reached them.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

EPOCH = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
ORG_ID = uuid.UUID("6b1d7c3e-0f4a-4c2b-9e5d-8a7f6c5b4a3d")
MEMBERS_PER_TEAM = 3
COMPLETIONS_PER_TEAM = 20
ADMIN_EVERY = 100
START_STRIDE, STEP = 7, 5
DAY = 86_400
SPREAD = 37

SEASON_ID = uuid.UUID("5e2a7c1d-3b4f-4e6a-8c9d-0f1e2d3c4b5a")
"""A season of the dataset, frozen now: from day 10 of the history, frozen at day 30,
ending a year after the seed (members rank by its frozen view, admins by the live one)."""
SEASON_STARTS = EPOCH + dt.timedelta(days=10)
SEASON_FREEZES = EPOCH + dt.timedelta(days=30)
LIVE_SEASON_ID = uuid.UUID("5e2a7c1d-3b4f-4e6a-8c9d-0f1e2d3c4b5b")
"""A season of the dataset running now, with no freeze: from day 20 of the history to a
year after the seed (everyone ranks by its live standings)."""
LIVE_SEASON_STARTS = EPOCH + dt.timedelta(days=20)
BRACKET = "group-3"
"""A tag a tenth of the teams carry (``group-{n mod 10}``)."""

# The demo's three disciplines (questline.demo.content): 3 levels x 2 quests x 3 tasks.
COLORS = ["Purple", "Green", "Red"]
TASK_COUNT = len(COLORS) * 3 * 2 * 3


class Kind:
    """The id kinds of ``bench.dataset.sqlgen.ident``."""

    TEAM, MEMBER, SCORE_EVENT, ORGANIZATION = 1, 2, 3, 4
    DISCIPLINE, LEVEL, QUEST, TASK, RESOURCE = 10, 11, 12, 13, 14


def first_task(n: int) -> int:
    return (START_STRIDE * n) % TASK_COUNT


def task_index(start: int, k: int) -> int:
    """The k-th task completed by the teams whose first task is ``start``."""
    return (start + STEP * k) % TASK_COUNT


def completion_seconds(n: int, k: int) -> int:
    return 2 * k * DAY + (SPREAD * n) % DAY


def is_admin(n: int) -> bool:
    return n % ADMIN_EVERY == ADMIN_EVERY - 1


def completed_tasks(n: int) -> set[int]:
    start = first_task(n)
    return {task_index(start, k) for k in range(COMPLETIONS_PER_TEAM)}


@dataclass(frozen=True, slots=True)
class TaskRef:
    id: uuid.UUID
    discipline_id: uuid.UUID
    points: int

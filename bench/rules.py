"""The shape of the benchmark's dataset, as rules the database and Python both follow.

One organization holds every team (the worst case for one tenant's leaderboard).
Team ``n`` has 3 members; every 100th team is an admin team. Three global
disciplines (the demo's three) have 3 levels x 3 quests x 4 tasks each. Team ``n``
completed the 20 tasks ``(7n + 5k) mod T`` for ``k = 0..19`` (task ``i`` is the i-th
task of the tree, ``T`` tasks in all), task ``k`` at
``EPOCH + 2k days + (37n mod 1 day) seconds``, so teams differ in what they did, in
their scores and in when they reached them.
"""

from __future__ import annotations

import datetime as dt
import uuid

EPOCH = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)
ORG_ID = uuid.UUID("6b1d7c3e-0f4a-4c2b-9e5d-8a7f6c5b4a3d")
MEMBERS_PER_TEAM = 3
COMPLETIONS_PER_TEAM = 20
ADMIN_EVERY = 100
START_STRIDE, STEP = 7, 5
DAY = 86_400
SPREAD = 37

# The three demo disciplines: title, colour, the points of their tasks (cycled).
DISCIPLINES = [
    ("Cloud basics", "Green", (10, 20, 30)),
    ("Secure by default", "Red", (20, 30, 40)),
    ("Working together", "Purple", (10, 10, 20)),
]
LEVELS, QUESTS, TASKS = 3, 3, 4
TASK_COUNT = len(DISCIPLINES) * LEVELS * QUESTS * TASKS


class Kind:
    """The id kinds of ``bench.sqlgen.ident``."""

    TEAM, MEMBER, SCORE_EVENT = 1, 2, 3
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

"""The team's state of each task in its overview, as a learner sees it: completed,
attempts left, hints unlocked, the submission waiting for review."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from questline.progress.discipline_tree import TaskNode


def _hex(value: Any) -> str:
    return str(value).replace("-", "")


@dataclass(frozen=True, slots=True)
class TeamTaskState:
    """The team's state of each task, from ``overview_query``'s last four columns."""

    completed: frozenset[str]
    attempts: dict[str, int]
    hints: dict[str, list[int]]
    pending: dict[str, str]

    @classmethod
    def of(cls, columns: Sequence[Any]) -> TeamTaskState:
        completed, attempts, hints, pending = (orjson.loads(c or "[]") for c in columns)
        unlocked: dict[str, list[int]] = defaultdict(list)
        for task_id, index in hints:
            unlocked[_hex(task_id)].append(int(index))
        return cls(
            completed=frozenset(_hex(t) for (t,) in completed),
            attempts={_hex(t): int(n) for t, n in attempts},
            hints={t: sorted(v) for t, v in unlocked.items()},
            pending={_hex(t): str(uuid.UUID(str(s))) for t, s in pending},
        )

    def task(self, node: TaskNode, *, locked: bool) -> dict[str, Any]:
        key = node.id.hex
        left = None
        if node.max_attempts is not None:
            left = max(0, node.max_attempts - self.attempts.get(key, 0))
        return {
            "TaskId": node.id,
            "Title": node.title,
            "Order": node.position,
            "Points": node.points,
            "Check": node.kind,
            "Completed": key in self.completed,
            "Locked": locked,
            "AttemptsLeft": left,
            "PendingSubmission": self.pending.get(key),
            "UnlockedHints": self.hints.get(key, []),
        }

"""The group-committed progress writes as the tests see them (the ``fast`` fixture,
conftest.py): the switch, the group commit, and how many progress writes the fast lane
answered, or left to the route, since the fixture was made (from the process's metrics:
the fast lane's answers and the access log's requests of the two routes)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from questline.progress.group_commit import BATCHES_GATHERED, GroupCommit
from questline.web.fastlane import ANSWERED
from questline.web.middleware import REQUESTS
from tests.support.harness import AppHarness

WRITE_ROUTES = (
    ("POST", "/team/{team_id}/progress"),
    ("DELETE", "/team/{team_id}/progress/{task_id}"),
)


def _count(counter: Any) -> float:
    return sum(
        sample.value
        for metric in counter.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
        and (sample.labels["method"], sample.labels["route"]) in WRITE_ROUTES
    )


class Fast:
    def __init__(self, app: FastAPI) -> None:
        self.harness = AppHarness(app)
        self._answered = _count(ANSWERED)
        self._requests = _count(REQUESTS)

    @property
    def enabled(self) -> bool:
        return self.harness.settings.progress_fast_path_enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self.harness.configure(progress_fast_path_enabled=value)

    @property
    def writes(self) -> GroupCommit:
        return self.harness.progress_writes

    @property
    def answered(self) -> int:
        return int(_count(ANSWERED) - self._answered)

    @property
    def declined(self) -> int:
        """Progress writes the route answered (refusals, unusual requests, the switch off)."""
        return int(_count(REQUESTS) - self._requests) - self.answered


def batches_gathered() -> int:
    """Batches that waited for their writers, in this process."""
    return int(BATCHES_GATHERED._value.get())

"""The progress writes' fast path as the tests see it (the ``fast`` fixture,
conftest.py): its switch, its group commit, and its answers counted from a test's
start."""

from __future__ import annotations

from questline.progress.fastpath import ANSWERED, DECLINED, FastWrites
from questline.progress.group_commit import BATCHES_GATHERED, GroupCommit


class Fast:
    """The app's fast path, with its answers counted from the fixture's start (the
    counters are the process's metrics)."""

    def __init__(self, path: FastWrites) -> None:
        self.path = path
        self.writes: GroupCommit = path.writes
        self._start = (ANSWERED._value.get(), DECLINED._value.get())

    @property
    def enabled(self) -> bool:
        return self.path.enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self.path.enabled = value

    @property
    def answered(self) -> int:
        return int(ANSWERED._value.get() - self._start[0])

    @property
    def declined(self) -> int:
        return int(DECLINED._value.get() - self._start[1])


def batches_gathered() -> int:
    """Batches that waited for their writers, in this process."""
    return int(BATCHES_GATHERED._value.get())

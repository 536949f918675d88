"""What a test worker makes once for a backend and keeps to the end of its run.

A test file runs its SQLite tests, then its PostgreSQL ones (pytest orders a file's
tests by the session-scoped ``backend`` parameter), so the next file switches back. A
session fixture that depends on ``backend`` is finished and made again at every switch:
a migrated database, a live server, twice a file. Kept here instead, keyed by what
they are, they are made once a worker and closed when its run ends.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import Any, TypeVar, cast

T = TypeVar("T")


class Kept:
    """Values and entered context managers of one backend, by name."""

    def __init__(self, stack: ExitStack) -> None:
        self._stack = stack
        self._made: dict[str, Any] = {}

    def value(self, name: str, make: Callable[[], T]) -> T:
        """``make()``'s result, made on the first call for ``name``."""
        if name not in self._made:
            self._made[name] = make()
        return cast(T, self._made[name])

    def entered(self, name: str, make: Callable[[], AbstractContextManager[T]]) -> T:
        """What ``make()``'s context manager gives, entered on the first call for
        ``name`` and exited when the worker's run ends."""
        return self.value(name, lambda: self._stack.enter_context(make()))

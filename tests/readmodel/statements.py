"""Counting what a request sends: through the engine (the route's session) and through
the read model's lean reader (the fast lane's misses, past the engine's events)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from tests.support.harness import AppHarness


@contextmanager
def statements(state: AppHarness) -> Iterator[dict[str, list[str]]]:
    """The statements sent through the engine (the route) and the lean reader."""
    seen: dict[str, list[str]] = {"engine": [], "lean": []}

    def engine(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen["engine"].append(statement)

    def lean(statement: str) -> None:
        seen["lean"].append(statement)

    sync_engine = state.db.engine.sync_engine
    event.listen(sync_engine, "before_cursor_execute", engine)
    state.readmodel.lean.listeners.append(lean)
    try:
        yield seen
    finally:
        event.remove(sync_engine, "before_cursor_execute", engine)
        state.readmodel.lean.listeners.remove(lean)

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


async def assert_lean_miss_is_the_routes(
    client: Any, state: AppHarness, url: str, headers: dict[str, str], *, sent: int = 1
) -> Any:
    """``url`` through the route, then as a lean miss: the same bytes, ``ETag`` and
    ``Link``, in ``sent`` statements and no session. Returns the lean answer."""
    readmodel = state.readmodel
    readmodel.lean.enabled = False
    routed = await client.get(url, headers=headers)
    assert routed.status_code == 200, routed.text
    readmodel.lean.enabled = True
    readmodel.cache.drop_bodies()
    with statements(state) as seen:
        lean = await client.get(url, headers=headers)
    assert lean.status_code == 200
    assert seen == {"engine": [], "lean": seen["lean"]}, seen
    assert len(seen["lean"]) == sent, seen
    assert lean.content == routed.content
    assert lean.headers["etag"] == routed.headers["etag"]
    assert lean.headers.get("link") == routed.headers.get("link")
    return lean


async def assert_left_to_the_route(
    client: Any, state: AppHarness, url: str, headers: dict[str, str], status: int
) -> None:
    """``url`` on a miss goes to the route (no lean statement), which answers
    ``status``: a problem document when it refuses."""
    state.readmodel.cache.drop_bodies()
    with statements(state) as seen:
        answer = await client.get(url, headers=headers)
    assert answer.status_code == status, answer.text
    assert seen["lean"] == []
    if status == 422:
        assert answer.headers["content-type"] == "application/problem+json"

"""The storage adapter's private uses do what the callers rely on, on the installed
aiosqlite and SQLAlchemy (their versions are pinned by tests/web/test_internals.py)."""

from __future__ import annotations

import sqlite3
import threading

import aiosqlite
import pytest
from sqlalchemy.pool import QueuePool

from questline.storage import internals

pytestmark = pytest.mark.anyio


async def test_work_runs_on_the_drivers_own_thread_with_its_connection() -> None:
    async with aiosqlite.connect(":memory:") as driver:
        assert internals.runs_on_driver_thread(driver)

        def work(label: str) -> tuple[str, int, str]:
            connection = internals.sqlite_connection_of(driver)
            value = connection.execute("SELECT 41 + 1").fetchone()[0]
            return label, value, threading.current_thread().name

        label, value, thread = await internals.on_driver_thread(driver, work, "batch")
    assert (label, value) == ("batch", 42)
    assert thread != threading.current_thread().name


def test_a_plain_connection_is_not_aiosqlites() -> None:
    assert not internals.runs_on_driver_thread(sqlite3.connect(":memory:"))


@pytest.mark.parametrize("max_overflow", [-1, 0, 7])
def test_the_pools_overflow_bound_is_read(max_overflow: int) -> None:
    pool = QueuePool(lambda: sqlite3.connect(":memory:"), pool_size=2, max_overflow=max_overflow)
    assert internals.max_overflow_of(pool) == max_overflow

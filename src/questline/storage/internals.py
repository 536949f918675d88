"""Every use of a private name of aiosqlite or SQLAlchemy, in one place.

aiosqlite runs each call on the thread that owns its SQLite connection, and has no
public way to run a function of ours there (several statements in one hop);
SQLAlchemy's queue pool does not expose its overflow bound. ``CHECKED_AGAINST`` names
the versions these uses were read against; ``tests/storage/test_internals.py`` fails
with a clear message when another version is installed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.pool import QueuePool

CHECKED_AGAINST = {"aiosqlite": "0.22.1", "sqlalchemy": "2.1.9"}

T = TypeVar("T")


def runs_on_driver_thread(driver: Any) -> bool:
    """Whether ``driver`` (a DBAPI connection's driver connection) is aiosqlite's, whose
    thread ``on_driver_thread`` can use."""
    return callable(getattr(driver, "_execute", None))


def sqlite_connection_of(driver: Any) -> sqlite3.Connection:
    """The ``sqlite3`` connection inside aiosqlite's: to be touched only on its thread
    (inside ``on_driver_thread``)."""
    connection = driver._conn
    assert isinstance(connection, sqlite3.Connection)
    return connection


async def on_driver_thread(driver: Any, work: Callable[..., T], *args: Any) -> T:
    """Run ``work(*args)`` on aiosqlite's thread, in one hop, as its own calls run."""
    result: T = await driver._execute(work, *args)
    return result


def max_overflow_of(pool: QueuePool) -> int:
    """Connections a queue pool may open beyond its size (-1: no bound)."""
    return int(pool._max_overflow)

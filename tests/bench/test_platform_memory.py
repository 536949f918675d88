"""bench.platform.memory: the SQLite page caches the worker memory check allows are those
of the service's own engine (its pool's capacity, SQLite's default cache a connection)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from bench.platform import memory

from questline.config import Settings
from questline.readmodel.lean import SQLITE_CACHE_KIB
from questline.storage.db import Database

pytestmark = pytest.mark.anyio


async def test_the_allowance_is_the_engines_pool_and_caches(tmp_path: Path) -> None:
    db = Database(Settings(data_dir=tmp_path, _env_file=None))  # type: ignore[call-arg]
    try:
        pool = db.engine.pool
        capacity = pool.size() + pool._max_overflow  # type: ignore[attr-defined]
        assert capacity == memory.SQLITE_POOLED_CONNECTIONS
    finally:
        await db.dispose()
    with sqlite3.connect(tmp_path / "probe.db") as connection:
        (cache_size,) = connection.execute("PRAGMA cache_size").fetchone()
    assert -cache_size == memory.SQLITE_DEFAULT_CACHE_KIB  # negative: KiB
    assert memory.sqlite_page_caches_kib() == SQLITE_CACHE_KIB + 15 * 2_000

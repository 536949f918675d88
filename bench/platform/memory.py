"""Resident memory of the service's worker processes, read from ``/proc``."""

from __future__ import annotations

import contextlib
import inspect
import os
import sqlite3
from pathlib import Path

from sqlalchemy.pool import QueuePool

from questline.readmodel.lean import SQLITE_CACHE_KIB


def _sqlite_default_cache_kib() -> int:
    with contextlib.closing(sqlite3.connect(":memory:")) as connection:
        (cache_size,) = connection.execute("PRAGMA cache_size").fetchone()
    return -int(cache_size)  # negative: KiB


def _queue_pool_capacity() -> int:
    defaults = inspect.signature(QueuePool.__init__).parameters
    return int(defaults["pool_size"].default) + int(defaults["max_overflow"].default)


SQLITE_DEFAULT_CACHE_KIB = _sqlite_default_cache_kib()
"""SQLite's default page cache a connection, as this SQLite reports it (2,000 KiB)."""
SQLITE_POOLED_CONNECTIONS = _queue_pool_capacity()
"""SQLAlchemy's ``QueuePool`` defaults, which the service keeps on SQLite (5 kept + 10
overflow), read from its signature."""


def sqlite_page_caches_kib() -> int:
    """What a SQLite worker's page caches hold once filled (docs/deploy.md, the worker
    memory formula): the lean reader's connection and each pooled one."""
    return SQLITE_CACHE_KIB + SQLITE_POOLED_CONNECTIONS * SQLITE_DEFAULT_CACHE_KIB


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _status(int(entry.name)).get("PPid") == str(pid):
            found.append(int(entry.name))
    return sorted(found)


def rss_kib(pid: int) -> int:
    value = _status(pid).get("VmRSS", "0 kB").split()[0]
    return int(value)


def workers_rss_kib(server_pid: int) -> dict[int, int]:
    """Each worker's resident memory (KiB): uvicorn's children that run the application
    (with one worker uvicorn serves in the process itself). uvicorn's supervisor spawns
    through ``multiprocessing``, whose resource tracker is a child too: the smallest
    processes that are not workers are left out by name."""
    children = [pid for pid in _children(server_pid) if "resource_tracker" not in _cmdline(pid)]
    pids = children or [server_pid]
    return {pid: rss_kib(pid) for pid in pids}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process used so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

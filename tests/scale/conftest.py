"""Fixtures of the scale-out tests: a primary, its streaming replica and pgbouncer.

These tests need PostgreSQL; pgbouncer and redis-server are installed with apt when
missing and the tests run as root, and otherwise the tests are skipped with the command.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY

from questline.app import create_app
from questline.storage.replicas import ReplicaRouter
from tests.conftest import BACKENDS
from tests.support.postgres import row_security_requested
from tests.support.topology import Cluster

needs_postgres = pytest.mark.skipif(
    "postgresql" not in BACKENDS, reason="PostgreSQL backend not selected"
)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """Shared by the tests that do not stop anything (each uses its own organizations)."""
    if "postgresql" not in BACKENDS:
        pytest.skip("PostgreSQL backend not selected")
    made = Cluster(server_pool_size=4, row_security=row_security_requested()).start()
    try:
        yield made
    finally:
        made.close()


class Apps:
    """In-process apps on the cluster, each with its own engines and replica state: as
    far as routing goes, each is a separate Questline process."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.made: list[Process] = []

    def __call__(self, **changes: Any) -> Process:
        app = create_app(self.cluster.settings(**changes))
        made = Process(app)
        self.made.append(made)
        return made

    async def close(self) -> None:
        for made in self.made:
            await made.client.aclose()
            await made.app.state.questline.db.dispose()


class Process:
    def __init__(self, app: FastAPI) -> None:
        self.app = app
        transport = httpx.ASGITransport(app=app)
        self.client = httpx.AsyncClient(transport=transport, base_url="http://questline.test")

    @property
    def router(self) -> ReplicaRouter:
        router: ReplicaRouter = self.app.state.questline.db.replicas
        return router

    async def wait_replica_usable(self, seconds: float = 30) -> None:
        """Until this process's monitor finds the replica current (it starts on first use)."""
        deadline = time.monotonic() + seconds
        self.router.choose(None)
        while time.monotonic() < deadline:
            replica = self.router.replicas[0]
            max_lag = self.router.settings.database_replica_max_lag_seconds
            if replica.usable(time.monotonic(), max_lag):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"replica not usable: {self.router.replicas[0].reason}")


@pytest.fixture
async def apps(cluster: Cluster) -> AsyncIterator[Apps]:
    made = Apps(cluster)
    try:
        yield made
    finally:
        await made.close()


def reads_on(target: str) -> float:
    """Read transactions of this test process so far that ran on ``target``."""
    return REGISTRY.get_sample_value("questline_database_reads_total", {"target": target}) or 0.0

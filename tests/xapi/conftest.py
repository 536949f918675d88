"""Fixtures of the xAPI tests: one Ralph LRS per test worker, a fresh user (a store of
its own) per organization and test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from questline.config import Settings
from tests.support.ralph_lrs import RalphServer, RalphUser

POOL = 48
_next_user = itertools.count()


@pytest.fixture(scope="session")
def ralph() -> Iterator[RalphServer]:
    server = RalphServer(users=[RalphUser(f"org{i}", f"secret-{i}-pw") for i in range(POOL)])
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def lrs_user(ralph: RalphServer) -> Iterator[RalphUser]:
    """A store nobody used yet (the pool is per worker; a worker runs one test at a time)."""
    index = next(_next_user)
    assert index < POOL, "raise POOL in tests/xapi/conftest.py"
    return ralph.users[index]


@pytest.fixture
def other_lrs_user(ralph: RalphServer) -> RalphUser:
    index = next(_next_user)
    assert index < POOL, "raise POOL in tests/xapi/conftest.py"
    return ralph.users[index]


@pytest.fixture
def settings(migrated_settings: Settings) -> Settings:
    """Ralph listens on loopback: private endpoints allowed (the test/dev allowance);
    quick retries; activity IRIs under a public URL of the tests."""
    return migrated_settings.model_copy(
        update={
            "xapi_allow_private_urls": True,
            "xapi_retry_base_seconds": 0.01,
            "xapi_batch_size": 10,
            "public_url": "https://questline.test",
        }
    )

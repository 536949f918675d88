"""Test harness: every test runs against SQLite and against a real PostgreSQL server.

The PostgreSQL server is started by the harness from the local binaries. The schema is
built by running the Alembic migrations once per backend; every test starts from empty
tables. Requests go through the real ASGI stack with real JWTs.

``QUESTLINE_TEST_BACKENDS=sqlite`` (or ``postgresql``) limits the run to one backend.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from questline.app import create_app
from questline.config import Settings
from questline.storage.migrate import upgrade
from tests.factories import World
from tests.support.database import empty_all_tables
from tests.support.harness import AppHarness
from tests.support.kept import Kept
from tests.support.postgres import (
    PostgresServer,
    create_row_security_database,
    row_security_requested,
    unique_database_name,
)

BACKENDS = [
    b.strip()
    for b in os.environ.get("QUESTLINE_TEST_BACKENDS", "sqlite,postgresql").split(",")
    if b.strip()
]

ROW_SECURITY = row_security_requested()
"""PostgreSQL tests connect as a service role under row-level security (docs/deploy.md,
"Two database roles"); tests/security/test_row_security.py always does."""

TEST_SETTINGS: dict[str, Any] = {
    "_env_file": None,
    "rate_limit_enabled": False,
    "metrics_cache_seconds": 0,
    "request_timeout_seconds": 600,
    "bulk_request_timeout_seconds": 600,
    "lti_http_timeout_seconds": 60,
    "xapi_timeout_seconds": 60,
}
"""Rate limits are off in tests unless a test turns them on (tests/web does); ``/metrics``
renders on every scrape (tests read counters right after acting). The service's own
deadlines are far out: on a loaded machine a request or a call to a test platform may
take longer than production's 30 s or 5 s, and a deadline hit there is the machine's,
not a fault (issue 26). Tests of a deadline set their own (tests/web/test_timeout.py)."""


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Which servers and browser this run uses (the system's, or the lock's wheels)."""
    from tests.support import postgres, redis, system_packages

    try:
        pg = str(postgres.find_bin_dir())
    except RuntimeError as exc:
        pg = f"none ({exc})"
    browser = system_packages.missing_reason(system_packages.CHROMIUM) or "present"
    return [
        f"backends: {', '.join(BACKENDS)}",
        f"postgresql binaries: {pg}",
        f"redis-server: {redis.find_binary() or 'none'}",
        f"chromium: {browser}",
    ]


ONE_BACKEND = "sqlite" if "sqlite" in BACKENDS else BACKENDS[0]
"""Where a test marked ``one_backend`` runs: what it checks does not depend on the
database (the requests it sends are checked on every backend by their own tests)."""
BACKEND_PARAMETERS = ("backend", "live")
"""The fixtures parametrized by backend: the application's, and the browser tests' server."""


def _backend_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    found = [callspec.params[name] for name in BACKEND_PARAMETERS if name in callspec.params]
    return str(found[0]) if found else None


def _not_for_its_backend(item: pytest.Item) -> bool:
    """``postgres_only`` on another backend than PostgreSQL, ``one_backend`` on another
    than ``ONE_BACKEND``."""
    backend = _backend_of(item)
    if backend is None:
        return False
    if item.get_closest_marker("postgres_only") and backend != "postgresql":
        return True
    return bool(item.get_closest_marker("one_backend")) and backend != ONE_BACKEND


@pytest.hookimpl(trylast=True)  # after pytest has ordered them by fixture parameters
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests not for a backend (``_not_for_its_backend``) are not collected for it (rather
    than skipped). The files with a ``slow`` test run first, each file's tests in their
    order: the workers take files in this order (``--dist loadfile``), and a long file
    taken last would leave one worker idle while the other finishes it."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (dropped if _not_for_its_backend(item) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    slow_files = {item.path for item in kept if item.get_closest_marker("slow")}
    items[:] = sorted(kept, key=lambda item: item.path not in slow_files)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def kept_sqlite() -> Iterator[Kept]:
    """What the SQLite tests of this worker keep to its end (``tests.support.kept``)."""
    with ExitStack() as stack:
        yield Kept(stack)


@pytest.fixture(scope="session")
def kept_postgresql(postgres_server: PostgresServer) -> Iterator[Kept]:
    """What the PostgreSQL tests of this worker keep to its end, closed before the
    server stops."""
    with ExitStack() as stack:
        yield Kept(stack)


def kept_for(request: pytest.FixtureRequest, backend: str) -> Kept:
    """The ``Kept`` of ``backend``."""
    kept: Kept = request.getfixturevalue(f"kept_{backend}")
    return kept


@pytest.fixture(scope="session")
def migrated_settings(
    backend: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Settings:
    """The backend's database at the migrations' head, made once a worker: a run on one
    backend shares it between files as well (each test empties what it uses)."""
    return migrated_for(backend, tmp_path_factory, request)


def migrated_for(
    backend: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Settings:
    """``migrated_settings`` of ``backend``, for a fixture that uses every backend."""
    return kept_for(request, backend).value(
        "migrated settings", lambda: _migrated(backend, tmp_path_factory, request)
    )


def _migrated(
    backend: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Settings:
    data_dir: Path = tmp_path_factory.mktemp(f"data-{backend}")
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        if ROW_SECURITY:
            owner_url, url = create_row_security_database(server)
            settings = Settings(
                data_dir=data_dir,
                database_url=url,
                database_owner_url=owner_url,
                database_row_security=True,
                **TEST_SETTINGS,
            )
        else:
            url = server.create_database(unique_database_name())
            settings = Settings(
                data_dir=data_dir, database_url=url, database_row_security=False, **TEST_SETTINGS
            )
    else:
        settings = Settings(data_dir=data_dir, **TEST_SETTINGS)
    upgrade(settings)
    return settings


@pytest.fixture
def settings(migrated_settings: Settings) -> Settings:
    return migrated_settings


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    app = create_app(settings)
    await empty_all_tables(AppHarness(app))
    try:
        yield app
    finally:
        await app.state.questline.db.dispose()


@pytest.fixture
async def other_app(settings: Settings) -> AsyncIterator[FastAPI]:
    """A second application on the same database: another worker process's view."""
    app = create_app(settings)
    try:
        yield app
    finally:
        await app.state.questline.db.dispose()


@pytest.fixture
def app_state(app: FastAPI) -> AppHarness:
    state = AppHarness(app)
    return state


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://questline.test") as c:
        yield c


@pytest.fixture
def world(client: httpx.AsyncClient, app_state: AppHarness) -> World:
    """Factories bound to this test's client and token service."""
    return World(client=client, tokens=app_state.tokens, db=app_state.db)

"""Fixtures of the browser tests: one live server per backend for the whole run,
Chromium per module (Playwright's sync API keeps an event loop running in the thread
while it is open: past the module it would break the tests that call asyncio.run in
the same worker), a guarded page factory and a freshly seeded organization per test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.conftest import BACKENDS, kept_for
from tests.dashboard.browser import CHROMIUM_ARGS, Guard, Pages, chromium_path
from tests.dashboard.live import LiveServer, live_database, live_server
from tests.dashboard.seed import SeededOrg, seed_org
from tests.support.postgres import PostgresServer
from tests.support.system_packages import CHROMIUM, missing_reason


@pytest.fixture(scope="session", params=BACKENDS)
def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> LiveServer:
    """A server per backend, started once a worker (``tests.support.kept``; tests marked
    ``one_backend`` are collected for one of them only)."""
    backend = str(request.param)

    def start() -> AbstractContextManager[LiveServer]:
        data_dir = tmp_path_factory.mktemp(f"e2e-{backend}")
        url = owner_url = None
        if backend == "postgresql":
            server: PostgresServer = request.getfixturevalue("postgres_server")
            url, owner_url = live_database(server, "questline_e2e")
        return live_server(data_dir, url, owner_url=owner_url)

    return kept_for(request, backend).entered("dashboard server", start)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    path = chromium_path()
    if path is None:
        # `make test` installs it as root; otherwise the reason says what to install.
        pytest.skip(missing_reason(CHROMIUM) or "Chromium not found")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(path), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def pages(live: LiveServer, browser: Browser) -> Iterator[Pages]:
    """Guarded pages on the live server; the test fails if a page misbehaved.
    (``live`` first: the server boots while Chromium launches.)"""
    live.ready()
    opened = Pages(browser=browser, origin=live.origin, guard=Guard(origin=live.origin))
    try:
        yield opened
    finally:
        opened.close()
    opened.guard.check()


@pytest.fixture
def org(live: LiveServer) -> SeededOrg:
    return seed_org(live.ready())

"""The SCIM compliance checker ``scim2-tester`` against the live service: a real server
process (uvicorn) on loopback, on SQLite and on PostgreSQL, with a stored SCIM token."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

from questline.config import Settings
from tests.bulk.live import LiveServer, start_server
from tests.scim.conftest import issue_token_sync

FAILING = {Status.ERROR, Status.CRITICAL}


@pytest.fixture
def live(migrated_settings: Settings, tmp_path: Path) -> Iterator[LiveServer]:
    server = start_server(migrated_settings, tmp_path / "server.log")
    try:
        yield server
    finally:
        server.process.terminate()
        server.process.wait()


def test_scim2_tester_reports_no_error(live: LiveServer, migrated_settings: Settings) -> None:
    token = issue_token_sync(migrated_settings, uuid.uuid4())
    with httpx2.Client(
        base_url=f"{live.url}/scim/v2", headers={"Authorization": f"Bearer {token}"}
    ) as http:
        results = check_server(SyncSCIMClient(http))
    failed = [f"{r.title} [{r.resource_type}]: {r.reason}" for r in results if r.status in FAILING]
    assert not failed, "\n".join(failed) + "\n" + live.log_text()[-3000:]
    ran = [r for r in results if r.status not in {Status.SKIPPED}]
    assert len(ran) >= 20, [r.title for r in results]
    titles = {r.title for r in ran}
    assert {"object_creation", "object_query", "object_replacement", "object_deletion"} <= titles

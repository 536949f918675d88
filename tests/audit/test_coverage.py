"""No committed change lacks its entry: every write route of the service, made by the
owner's admin (the isolation matrix's positive control), leaves at least one audit
entry carrying that request's id."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.factories import World
from tests.web.test_isolation_matrix import EXPECTED, _call, _order, _resolve
from tests.web.test_isolation_matrix import settings as settings  # its app's settings

pytestmark = pytest.mark.anyio

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
NOT_AUDITED = frozenset(
    {
        # Completions carry who recorded them; the log does not repeat them.
        ("POST", "/team/{team_id}/progress"),
        ("DELETE", "/team/{team_id}/progress/{task_id}"),
        # Signing in and out changes nothing of the organization (docs/audit.md).
        ("POST", "/auth/session"),
        ("DELETE", "/auth/session"),
        # Sends one statement to the organization's LRS and reports its answer: nothing
        # of the organization changes.
        ("POST", "/organization/xapi/test"),
    }
)


async def test_every_write_route_leaves_an_entry(app: FastAPI, world: World) -> None:
    owner = world.org()
    resolved = await _resolve(owner, app.openapi()["paths"], world.db, app.state.questline.settings)
    missing: list[str] = []
    refused: list[str] = []
    checked = 0
    for key in sorted(EXPECTED, key=_order):
        if key[0] not in WRITES or key in NOT_AUDITED:
            continue
        response = await _call(world.client, key, resolved, owner.admin)
        assert response.status_code == EXPECTED[key].statuses["admin"], (key, response.text)
        if response.status_code >= 300:
            # Refused in this app (no SMTP server, no provider to fetch, a scim token's
            # route): a refusal changes nothing, so it leaves no entry either.
            refused.append(f"{key[0]} {key[1]}")
            continue
        request_id = response.headers["X-Request-Id"]
        log = await world.client.get("/audit", params={"limit": 1000}, headers=owner.admin)
        if not any(entry["RequestId"] == request_id for entry in log.json()):
            missing.append(f"{key[0]} {key[1]}")
        checked += 1
    assert checked >= 15  # the writes of teams, members, disciplines, webhooks, bulk, adjustments
    assert not missing, f"write routes that left no audit entry: {missing}"
    assert "PUT /organization/sso" in refused  # the refusals are the matrix's, not a 5xx

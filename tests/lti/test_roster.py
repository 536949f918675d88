"""Names and Role Provisioning Services: the course roster, read from the platform
with a client-credentials token that the platform verifies with Questline's keys."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select

from questline.members.models import Member
from questline.storage import tenancy
from tests.factories import Org, World
from tests.lti.support import launch, register
from tests.support.harness import AppHarness
from tests.support.lti_platform import INSTRUCTOR, LEARNER, LtiPlatform

pytestmark = pytest.mark.anyio


def _person(user_id: str, email: str | None, status: str = "Active") -> dict[str, Any]:
    found: dict[str, Any] = {
        "user_id": user_id,
        "status": status,
        "given_name": user_id.title(),
        "roles": [LEARNER],
    }
    if email is not None:
        found["email"] = email
    return found


async def _sync(org: Org, platform_id: str) -> dict[str, int]:
    answer = await org.client.post(f"/lti/platform/{platform_id}/sync", headers=org.admin)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def _active_emails(app_state: AppHarness, org: Org) -> list[str]:
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=False) as session:
            rows = await session.scalars(
                select(Member.email).where(
                    Member.organization_id == org.id, Member.active.is_not(False)
                )
            )
            return sorted(rows.all())


async def test_the_roster_adds_and_deactivates_members_idempotently(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform, app_state: AppHarness
) -> None:
    org = world.org()
    registered = await register(org, platform)
    keys = (await client.get("/.well-known/jwks.json")).json()
    platform.trust_tool_keys(keys, "http://questline.test/lti/launch")
    # Before any launch the roster service is unknown.
    early = await client.post(f"/lti/platform/{registered['Id']}/sync", headers=org.admin)
    assert early.status_code == 409, early.text
    roster = [
        _person("teacher", "teacher@example.org"),
        _person("ann", "ann@example.org"),
        _person("ben", "ben@example.org"),
        _person("cid", None),
        _person("dee", "dee@example.org", status="Inactive"),
    ]
    platform.set_roster(roster)
    claims = platform.claims_for("teacher", email="teacher@example.org", roles=[INSTRUCTOR])
    launched = await launch(
        client, platform, "hint-nrps", claims, **platform.nrps_claim(), **platform.ags_claim()
    )
    assert launched.status_code == 303, launched.text
    # The launch synced the roster after answering (3 pages of 2).
    active = await _active_emails(app_state, org)
    assert len(active) == 4
    assert "dee@example.org" not in active
    assertion = platform.state.assertions[-1]
    assert assertion["aud"] == f"{platform.base}/token"
    assert assertion["iss"] == assertion["sub"] == platform.client_id
    again = await _sync(org, registered["Id"])
    assert again == {"Read": 5, "Added": 0, "Reactivated": 0, "Deactivated": 0}
    # Ben leaves the course: deactivated, out of his team, his team's progress kept.
    team = await org.create_team("Rockets")
    assert (await org.add_member(team["Id"], email="ben@example.org")).status_code == 201
    platform.set_roster([p for p in roster if p["user_id"] != "ben"])
    left = await _sync(org, registered["Id"])
    assert left == {"Read": 4, "Added": 0, "Reactivated": 0, "Deactivated": 1}
    members = (await client.get(f"/team/{team['Id']}/members", headers=org.admin)).json()
    assert members == []
    assert "ben@example.org" not in await _active_emails(app_state, org)
    assert (await _sync(org, registered["Id"]))["Deactivated"] == 0
    # Back in the course: active again.
    platform.set_roster(roster)
    back = await _sync(org, registered["Id"])
    assert back == {"Read": 5, "Added": 0, "Reactivated": 1, "Deactivated": 0}
    audit = (await client.get("/audit", headers=org.admin)).json()
    assert "lti.roster_synced" in {entry["Action"] for entry in audit}


async def test_another_organization_cannot_sync_the_platform(
    world: World, platform: LtiPlatform
) -> None:
    org, other = world.org(), world.org()
    registered = await register(org, platform)
    answer = await other.client.post(f"/lti/platform/{registered['Id']}/sync", headers=other.admin)
    assert answer.status_code == 404
    member = await org.client.post(f"/lti/platform/{registered['Id']}/sync", headers=org.member)
    assert member.status_code == 403

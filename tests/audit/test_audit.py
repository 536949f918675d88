"""The audit log: an entry for each kind of change, written with the change (none for a
rolled-back one), append-only, filtered, paged, exported and purged."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update

from questline.audit import service
from questline.audit.models import AuditEntry
from questline.auth import sessions
from questline.storage import tenancy
from questline.storage.db import utcnow
from questline.web.identity import Role
from tests.factories import Org, World, bearer
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

DOCUMENT = {
    "Title": "Safety",
    "Description": "x",
    "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [{"Title": "T", "Points": 5}]}]}],
}


async def entries(org: Org, **params: Any) -> list[dict[str, Any]]:
    response = await org.client.get("/audit", params={"limit": 1000, **params}, headers=org.admin)
    assert response.status_code == 200, response.text
    return list(response.json())


async def count_rows(world: World) -> int:
    """Every organization's entries and the platform's (row security: as the purge)."""
    with tenancy.for_every_organization():
        async with world.db.session(write=False) as session:
            return int(await session.scalar(select(func.count()).select_from(AuditEntry)) or 0)


async def test_each_kind_of_change_leaves_an_entry(world: World) -> None:
    org = world.org()
    client, admin = org.client, org.admin
    team = await org.create_team("Owls", tags=["a"])
    renamed = await client.patch(
        f"/team/{team['Id']}", json={"Name": "Hawks", "Tags": ["b"]}, headers=admin
    )
    assert renamed.status_code == 200
    archived = await client.patch(f"/team/{team['Id']}", json={"Status": "Archived"}, headers=admin)
    assert archived.status_code == 200
    await client.patch(f"/team/{team['Id']}", json={"Status": "Active"}, headers=admin)
    await client.post(f"/team/{team['Id']}/isadminteam", headers=admin)
    await client.post(f"/team/{team['Id']}/isadminteam", headers=admin)
    await client.post(f"/team/{team['Id']}/survey", headers=admin)
    joined = await org.add_member(team["Id"], email="ada@example.org")
    member_id = joined.json()["Id"]
    await client.delete(f"/team/{team['Id']}/members/{member_id}", headers=admin)
    made = await client.post("/discipline", json=DOCUMENT, headers=admin)
    discipline = made.json()
    replaced = await client.put(
        f"/discipline/{discipline['Id']}", json={**DOCUMENT, "Title": "Security"}, headers=admin
    )
    assert replaced.status_code == 200, replaced.text
    task_id = replaced.json()["Levels"][0]["Quests"][0]["Tasks"][0]["Id"]
    done = await client.post(
        f"/team/{team['Id']}/progress", json={"TaskId": task_id}, headers=admin
    )
    assert done.status_code == 201
    adjusted = await client.post(
        f"/team/{team['Id']}/adjustments", json={"Points": 3, "Reason": "r"}, headers=admin
    )
    await client.delete(f"/team/{team['Id']}/adjustments/{adjusted.json()['Id']}", headers=admin)
    gone = await client.delete(f"/discipline/{discipline['Id']}?force=true", headers=admin)
    assert gone.status_code == 204
    hook = await client.post(
        "/webhook",
        json={"url": "https://93.184.215.14/hook", "events": ["team.created"]},
        headers=admin,
    )
    hook_id = hook.json()["Id"]
    await client.patch(f"/webhook/{hook_id}", json={"Description": "d"}, headers=admin)
    await client.post(f"/webhook/{hook_id}/secret", headers=admin)
    await client.delete(f"/webhook/{hook_id}", headers=admin)
    bulk = await client.post("/team/bulk", json=[{"name": "B1"}, {"name": "B2"}], headers=admin)
    assert bulk.status_code == 201
    await client.delete(f"/team/{team['Id']}", headers=admin)

    found = list(reversed(await entries(org)))  # oldest first
    actions = [e["Action"] for e in found]
    assert actions == [
        "team.created",
        "team.renamed",
        "team.retagged",
        "team.status_changed",
        "team.status_changed",
        "team.admin_changed",
        "team.admin_changed",
        "team.survey_changed",
        "member.created",
        "member.added",
        "member.removed",
        "discipline.created",
        "discipline.replaced",
        "team.adjusted",
        "team.adjustment_withdrawn",
        "discipline.deleted",
        "webhook.created",
        "webhook.updated",
        "webhook.secret_rotated",
        "webhook.deleted",
        "team.created",
        "team.created",
        "team.deleted",
    ]
    by_action = {e["Action"]: e for e in found}
    assert {(e["Actor"], e["ActorRole"], e["ActorVia"]) for e in found} == {
        ("admin", "admin", "token")
    }
    rename = by_action["team.renamed"]
    assert rename["TargetType"] == "team"
    assert rename["TargetId"] == team["Id"]
    assert rename["Changes"] == {"Name": {"Before": "Owls", "After": "Hawks"}}
    assert rename["RequestId"] == renamed.headers["X-Request-Id"]
    assert by_action["team.retagged"]["Changes"]["Tags"] == {"Before": ["a"], "After": ["b"]}
    assert by_action["team.status_changed"]["Changes"]["Status"]["Before"] == "Archived"
    assert by_action["member.created"]["Changes"]["Email"]["After"] == "ada@example.org"
    assert by_action["discipline.replaced"]["Changes"] == {
        "Title": {"Before": "Safety", "After": "Security"}
    }
    assert by_action["discipline.deleted"]["Changes"]["Forced"]["Before"] is True
    assert by_action["team.adjusted"]["Changes"]["Points"] == {"Before": None, "After": 3}
    assert by_action["team.deleted"]["Changes"]["Name"] == {"Before": "Hawks", "After": None}
    text = str(found)
    assert "whsec_" not in text
    assert by_action["webhook.secret_rotated"]["Changes"]["OverlapEndsAt"]["After"]
    assert hook.json()["Secret"] not in text
    assert {e["TargetType"] for e in found if e["Action"] == "webhook.created"} == {"webhook"}


async def test_a_rolled_back_change_leaves_no_entry(world: World) -> None:
    org = world.org()
    team = await org.create_team("Owls")
    made = await org.client.post("/discipline", json=DOCUMENT, headers=org.admin)
    task_id = made.json()["Levels"][0]["Quests"][0]["Tasks"][0]["Id"]
    done = await org.client.post(
        f"/team/{team['Id']}/progress", json={"TaskId": task_id}, headers=org.admin
    )
    assert done.status_code == 201
    before = await count_rows(world)
    # The entry is written before the progress check refuses: the whole transaction goes.
    refused = await org.client.delete(f"/discipline/{made.json()['Id']}", headers=org.admin)
    assert refused.status_code == 409
    dry = await org.client.post("/team/bulk?dryRun=true", json=[{"name": "X"}], headers=org.admin)
    assert dry.status_code == 200, dry.text
    taken = await org.client.patch(
        f"/team/{(await org.create_team('Other'))['Id']}", json={"Name": "owls"}, headers=org.admin
    )
    assert taken.status_code == 409
    assert await count_rows(world) == before + 1  # the team "Other" only
    assert next(e["Action"] for e in await entries(org)) == "team.created"


async def test_the_log_is_append_only_and_admin_only(world: World) -> None:
    org, other = world.org(), world.org()
    await org.create_team()
    first = await entries(org)
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        response = await org.client.request(method, "/audit", headers=org.admin)
        assert response.status_code == 405, (method, response.status_code)
        one = await org.client.request(method, f"/audit/{first[0]['Id']}", headers=org.admin)
        assert one.status_code in (404, 405)
    assert (await org.client.get("/audit", headers=org.member)).status_code == 403
    assert await entries(other) == []
    theirs = await other.create_team()
    [their_entry] = await entries(other)
    assert their_entry["TargetId"] == theirs["Id"]
    assert first[0]["TargetId"] not in str(await entries(other))
    assert await entries(other, target=first[0]["TargetId"]) == []
    assert await entries(org) == first


async def test_filters_paging_and_csv(world: World, app_state: AppHarness) -> None:
    org = world.org()
    second_admin = bearer(app_state.tokens.mint(role=Role.ADMIN, org_id=org.id, subject="grace"))
    teams = [await org.create_team(f"T{i}") for i in range(3)]
    for team in teams:
        renamed = await org.client.patch(
            f"/team/{team['Id']}", json={"Name": team["Name"] + "x"}, headers=second_admin
        )
        assert renamed.status_code == 200
    everything = await entries(org)
    assert len(everything) == 6
    assert [e["Action"] for e in await entries(org, actor="grace")] == ["team.renamed"] * 3
    assert len(await entries(org, action="team.created")) == 3
    assert {e["TargetId"] for e in await entries(org, target=teams[1]["Id"])} == {teams[1]["Id"]}
    assert await entries(org, target=str(uuid.uuid4())) == []
    middle = everything[2]["At"]
    assert [e["Id"] for e in await entries(org, to=middle)] == [e["Id"] for e in everything[2:]]
    assert [e["Id"] for e in await entries(org, **{"from": middle})] == [
        e["Id"] for e in everything[:3]
    ]
    bad = await org.client.get(
        "/audit",
        params={"from": "2026-02-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"},
        headers=org.admin,
    )
    assert bad.status_code == 422
    twice = await org.client.get("/audit?actor=grace&actor=admin", headers=org.admin)
    assert twice.status_code == 422
    paged: list[str] = []
    url: str | None = "/audit?limit=4"
    while url is not None:
        page = await org.client.get(url, headers=org.admin)
        assert page.status_code == 200
        paged += [e["Id"] for e in page.json()]
        link = page.headers.get("Link")
        url = link[1 : link.index(">")] if link else None
    assert paged == [e["Id"] for e in everything]
    exported = await org.client.get("/audit", headers={**org.admin, "Accept": "text/csv"})
    assert exported.status_code == 200
    lines = exported.text.strip().splitlines()
    assert lines[0] == (
        "Id,At,Actor,ActorRole,ActorVia,Action,TargetType,TargetId,RequestId,Changes"
    )
    assert len(lines) == 7
    assert '""Name""' in exported.text  # the changes as JSON text, quoted


async def test_a_dashboard_session_is_named_as_such(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    org = world.org()
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with app_state.db.session(write=True) as session:
            code = await sessions.mint_signin_code(
                session, settings=app_state.settings, org_id=org.id, role=Role.ADMIN, subject="ada"
            )
    signed_in = await client.post("/auth/session", json={"Code": code})
    assert signed_in.status_code == 201
    made = await client.post(
        "/team", json={"name": "Cookies"}, headers={"X-CSRF-Token": signed_in.json()["CsrfToken"]}
    )
    assert made.status_code == 201, made.text
    client.cookies.clear()
    [entry] = await entries(org)
    assert (entry["Actor"], entry["ActorRole"], entry["ActorVia"]) == ("ada", "admin", "session")


async def test_global_changes_stay_out_of_every_organization(world: World) -> None:
    org = world.org()
    operator = bearer(world.operator_token())
    made = await org.client.post("/discipline", json=DOCUMENT, headers=operator)
    assert made.status_code == 201, made.text
    assert await entries(org) == []
    assert await count_rows(world) == 1


async def test_retention_purges_old_entries(world: World, app_state: AppHarness) -> None:
    org = world.org()
    old, new = await org.create_team(), await org.create_team()
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with world.db.session(write=True) as session:
            await session.execute(
                update(AuditEntry)
                .where(AuditEntry.organization_id == org.id, AuditEntry.target_id == old["Id"])
                .values(at=utcnow() - dt.timedelta(days=400))
            )
    settings = app_state.settings.model_copy(update={"audit_purge_interval_seconds": 3600})
    purger = asyncio.get_running_loop().create_task(service.purge_periodically(world.db, settings))
    try:
        # The purger's delete is seen in the database, which signals nothing: polled.
        while await count_rows(world) != 1:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    finally:
        purger.cancel()
        with pytest.raises(asyncio.CancelledError):
            await purger
    assert [e["TargetId"] for e in await entries(org)] == [new["Id"]]
    with tenancy.for_every_organization():  # as the purge runs (row security)
        async with world.db.session(write=True) as session:
            purged = await service.purge_expired(session, older_than=utcnow() + dt.timedelta(1))
    assert purged == 1
    assert await entries(org) == []

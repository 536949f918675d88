"""A discipline's document is kept once, by the discipline's own version, and shared by
the organizations that see it: a global discipline read by one organization is a
one-statement miss (the visibility and version check) for every other one."""

from __future__ import annotations

import uuid

import pytest

from questline.disciplines.checks import Audience
from questline.disciplines.service import DOCUMENTS, document_memo
from tests.disciplines.factories import discipline_document
from tests.factories import World, bearer
from tests.readmodel.statements import assert_lean_miss_is_the_routes, statements
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def test_a_global_document_read_by_one_organization_is_one_statement_for_another(
    world: World, app_state: AppHarness
) -> None:
    operator = bearer(world.operator_token())
    made = await world.client.post(
        "/discipline", json=discipline_document(levels=2, quests=2, tasks=3), headers=operator
    )
    assert made.status_code == 201, made.text
    url = f"/discipline/{made.json()['Id']}"
    first, second = world.org(), world.org()
    # Both organizations exist (an organization is registered by its first request).
    for org in (first, second):
        assert (await world.client.get("/team", headers=org.member)).status_code == 200

    read = await assert_lean_miss_is_the_routes(world.client, app_state, url, first.member)
    # The second organization has no entry of its own: the first's read left the
    # document (as members read it) in the read model, so its miss is the version check
    # alone.
    with statements(app_state) as seen:
        other = await world.client.get(url, headers=second.member)
    assert other.status_code == 200
    assert seen["engine"] == []
    assert len(seen["lean"]) == 1
    assert "disciplines.version" in seen["lean"][0]
    assert (other.content, other.headers["ETag"]) == (read.content, read.headers["ETag"])

    # A new version of the discipline is never answered from the old document.
    replaced = await world.client.put(
        url, json={**read.json(), "Title": "Renamed"}, headers=operator
    )
    assert replaced.status_code == 200, replaced.text
    app_state.readmodel.cache.drop_bodies()
    renamed = await world.client.get(url, headers=second.member)
    assert renamed.json() == replaced.json()
    assert renamed.headers["ETag"] == replaced.headers["ETag"] != read.headers["ETag"]


async def test_an_organizations_own_document_stays_its_own(
    world: World, app_state: AppHarness
) -> None:
    owner, stranger = world.org(), world.org()
    made = await world.client.post("/discipline", json=discipline_document(), headers=owner.admin)
    assert made.status_code == 201, made.text
    discipline_id = made.json()["Id"]
    url = f"/discipline/{discipline_id}"
    assert (await world.client.get(url, headers=owner.member)).status_code == 200
    app_state.readmodel.cache.drop_bodies()
    kept = app_state.readmodel.memo_at(
        DOCUMENTS, document_memo(uuid.UUID(discipline_id), Audience.LEARNER), 1
    )
    assert kept is not None, "the owner's read kept the document"

    # Kept, and still not another organization's to read: the check comes first.
    for headers in (stranger.member, stranger.admin):
        refused = await world.client.get(url, headers=headers)
        assert refused.status_code == 404
        assert refused.headers["content-type"] == "application/problem+json"
        assert made.json()["Title"] not in refused.text

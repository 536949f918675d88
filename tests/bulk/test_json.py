"""POST /team/bulk with a JSON array: all or nothing, every problem named by index."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event

from questline.app import create_app
from questline.config import Settings
from tests.bulk.factories import fields_of, post_csv, post_json, team_items, team_names
from tests.factories import Org, World
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def test_creates_teams_in_input_order_with_members_and_tags(world: World) -> None:
    org = world.org()
    ada = await org.create_member("ada@example.org")
    grace = await org.create_member("grace@example.org")
    before = await team_names(org)
    items = [
        {"name": "  Zebras ", "members": [ada["Id"], grace["Id"], ada["Id"]], "tags": ["x", "X"]},
        {"NAME": "Antelopes", "Tags": ["y"]},
        {"name": "Mice", "members": [grace["Id"]]},
    ]
    response = await post_json(org, items)
    assert response.status_code == 201, response.text
    created = response.json()
    assert [t["Name"] for t in created] == ["Zebras", "Antelopes", "Mice"]
    assert [t["MemberCount"] for t in created] == [2, 0, 1]
    assert created[0]["Tags"] == ["x"]
    assert set(created[0]) == {
        "Id",
        "Name",
        "OrganizationId",
        "Status",
        "Tags",
        "Score",
        "IsSurveyCompleted",
        "IsAdminTeam",
        "MemberCount",
        "CreatedAt",
    }
    assert all(t["OrganizationId"] == str(org.id) and t["Status"] == "Active" for t in created)
    assert all(t["Score"] == 0 and t["IsAdminTeam"] is False for t in created)
    assert sorted(await team_names(org)) == sorted([*before, "Zebras", "Antelopes", "Mice"])
    detail = await world.client.get(f"/team/{created[0]['Id']}", headers=org.admin)
    assert {m["Email"] for m in detail.json()["Members"]} == {
        "ada@example.org",
        "grace@example.org",
    }
    listed = {t["Id"]: t for t in await org.teams()}
    assert listed[created[0]["Id"]]["MemberCount"] == 2


async def test_one_bad_item_in_a_thousand_creates_nothing(world: World) -> None:
    org = world.org()
    items = team_items(1000)
    items[637]["name"] = "x" * 101
    response = await post_json(org, items)
    assert fields_of(response) == ["[637].name"]
    assert "nothing was created" in response.json()["detail"]
    assert await org.teams() == []


async def test_every_problem_is_reported_at_once_in_input_order(world: World) -> None:
    org = world.org()
    await org.create_team("Existing")
    items: list[dict[str, Any]] = [
        {"name": "ok"},
        {"name": "existing"},
        {"name": ""},
        {"name": "Twice", "members": [str(uuid.uuid4())]},
        {"nmae": "typo"},
        {"name": "TWICE"},
        {"name": "t", "tags": ["a" * 51]},
    ]
    response = await post_json(org, items)
    assert fields_of(response) == [
        "[1].name",
        "[2].name",
        "[3].members[0]",
        "[4].name",
        "[4].nmae",
        "[5].name",
        "[6].tags[0]",
    ]
    messages = {e["field"]: e["message"] for e in response.json()["errors"]}
    assert "already exists" in messages["[1].name"]
    assert "[3]" in messages["[5].name"]
    assert messages["[4].nmae"].startswith("Unknown field")
    assert await team_names(org) == ["Existing"]


async def test_duplicates_inside_the_request_ignore_case(world: World) -> None:
    org = world.org()
    response = await post_json(org, [{"name": "Rockets"}, {"name": "b"}, {"name": "ROCKETS "}])
    assert fields_of(response) == ["[2].name"]
    assert await org.teams() == []


async def test_names_taken_in_the_organization_are_problems(world: World) -> None:
    org = world.org()
    await org.create_team("Rockets")
    response = await post_json(org, [{"name": "new"}, {"name": "rOCKETS"}])
    assert response.status_code == 409  # the request's only problem: a conflict
    assert [e["field"] for e in response.json()["errors"]] == ["[1].name"]
    assert await team_names(org) == ["Rockets"]


async def test_unknown_member_ids_are_named_with_their_position(world: World) -> None:
    org = world.org()
    other = world.org()
    mine = await org.create_member()
    theirs = await other.create_member()
    before = await team_names(org)
    unknown = str(uuid.uuid4())
    items = [
        {"name": "A", "members": [mine["Id"], unknown, unknown]},
        {"name": "B", "members": [theirs["Id"]]},
    ]
    response = await post_json(org, items)
    assert fields_of(response) == ["[0].members[1]", "[1].members[0]"]
    assert unknown in response.json()["errors"][0]["message"]
    assert await team_names(org) == before


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ([], 422),
        ({"name": "not an array"}, 422),
        ([None], 422),
        (["just a name"], 422),
    ],
)
async def test_bodies_that_are_not_arrays_of_teams(world: World, body: Any, status: int) -> None:
    org = world.org()
    response = await post_json(org, body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert await org.teams() == []


async def test_malformed_json_is_400(world: World) -> None:
    org = world.org()
    response = await org.client.post(
        "/team/bulk",
        content=b'[{"name": "a"},',
        headers={**org.admin, "Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert await org.teams() == []


async def test_member_token_is_403_and_no_token_401(world: World) -> None:
    org = world.org()
    response = await post_json(org, team_items(3), headers=org.member)
    assert response.status_code == 403
    response = await org.client.post("/team/bulk", json=team_items(3))
    assert response.status_code == 401
    assert await org.teams() == []


async def test_another_organization_sees_nothing(world: World) -> None:
    org, other = world.org(), world.org()
    response = await post_json(org, team_items(5, "Mine"))
    assert response.status_code == 201
    assert await other.teams() == []
    team_id = response.json()[0]["Id"]
    assert (await world.client.get(f"/team/{team_id}", headers=other.admin)).status_code == 404
    # The same names are free in the other organization.
    assert (await post_json(other, team_items(5, "Mine"))).status_code == 201


async def test_a_retried_request_with_the_same_key_creates_nothing_twice(world: World) -> None:
    org = world.org()
    key = {"Idempotency-Key": f"bulk-{uuid.uuid4()}"}
    first = await post_json(org, team_items(50), headers={**org.admin, **key})
    assert first.status_code == 201
    again = await post_json(org, team_items(50), headers={**org.admin, **key})
    assert again.status_code == 201
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json() == first.json()
    assert len(await org.teams()) == 50
    other_body = await post_json(org, team_items(3, "Other"), headers={**org.admin, **key})
    assert other_body.status_code == 422
    assert len(await org.teams()) == 50


async def test_concurrent_retries_with_one_key_all_get_the_one_answer(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "Idempotency-Key": "cohort-7"}
    responses = await asyncio.gather(
        *(post_json(org, team_items(200, "Cohort"), headers=headers) for _ in range(3))
    )
    assert [r.status_code for r in responses] == [201, 201, 201], [r.text[:200] for r in responses]
    assert len({r.content for r in responses}) == 1
    assert len(await org.teams()) == 200


async def test_a_retried_csv_upload_with_the_same_key_replays(world: World) -> None:
    org = world.org()
    body = "team,email,givenName,tags\r\nA,a@example.org,Ada,\r\nB,,,\r\n"
    key = {**org.admin, "Idempotency-Key": "upload-1"}
    first = await post_csv(org, body, headers=key)
    again = await post_csv(org, body, headers=key)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert await team_names(org) == ["A", "B"]


async def test_concurrent_overlapping_requests_are_all_or_nothing(world: World) -> None:
    org = world.org()
    batch_a = team_items(300, "Shared")
    batch_b = [*team_items(300, "Shared")[150:], *team_items(150, "Only B")]
    first, second = await asyncio.gather(post_json(org, batch_a), post_json(org, batch_b))
    statuses = sorted([first.status_code, second.status_code])
    assert statuses[0] == 201, (first.text, second.text)
    assert statuses[1] in (409, 422)
    winner = batch_a if first.status_code == 201 else batch_b
    assert sorted(await team_names(org)) == sorted(item["name"] for item in winner)


async def test_writes_are_a_handful_of_statements_not_one_per_row(
    world: World, app_state: AppHarness
) -> None:
    """3,000 teams with 3 members each: no statement a row (tests/bulk/test_statements.py
    asserts the counts are the same for 10 teams)."""
    org = world.org()
    people = [(await org.create_member())["Id"] for _ in range(3)]
    before = len(await org.teams())
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(str(args[2]).lstrip().split(None, 3)[0].upper())

    items = team_items(3000, "Big", members=people, tags=["cohort"])
    event.listen(app_state.db.engine.sync_engine, "before_cursor_execute", count)
    try:
        response = await post_json(org, items)
    finally:
        event.remove(app_state.db.engine.sync_engine, "before_cursor_execute", count)
    assert response.status_code == 201, response.text[:500]
    # teams and memberships: one COPY each on PostgreSQL (not engine statements), one
    # executemany INSERT each on SQLite; one SELECT for names, one for member ids, plus
    # auth's own; one INSERT for the outbox's bulk.completed event, one version bump.
    assert statements.count("INSERT") <= 7, statements
    assert len(statements) <= 15, statements
    assert len(await org.teams()) == before + 3000
    assert {t["MemberCount"] for t in response.json()} == {3}


@pytest.fixture
async def limited_app(settings: Settings) -> AsyncIterator[FastAPI]:
    app = create_app(settings.model_copy(update={"max_bulk_teams": 5}))
    try:
        yield app
    finally:
        await app.state.questline.db.dispose()


async def test_the_team_limit_is_413_and_configurable(
    world: World, limited_app: FastAPI, app: FastAPI
) -> None:
    org = world.org()
    transport = httpx.ASGITransport(app=limited_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://questline.test") as c:
        limited = Org(org.id, c, org.admin_token, org.member_token)
        too_many = await post_json(limited, team_items(6))
        assert too_many.status_code == 413, too_many.text
        assert "At most 5 teams" in too_many.json()["detail"]
        rows = "".join(
            f"T{i},p{i}@example.org,P,\r\nT{i},q{i}@example.org,Q,\r\n" for i in range(6)
        )
        csv_too_many = await post_csv(limited, "team,email,givenName,tags\r\n" + rows)
        assert csv_too_many.status_code == 413, csv_too_many.text
        assert await limited.teams() == []
        assert (await post_json(limited, team_items(5))).status_code == 201
        # 10 rows, 5 teams: the limit counts teams, not rows.
        five = "".join(
            f"C{i},p{i}@example.org,P,\r\nC{i},q{i}@example.org,Q,\r\n" for i in range(5)
        )
        response = await post_csv(limited, "team,email,givenName,tags\r\n" + five)
        assert response.status_code == 201, response.text
    # The default application keeps its limit of 10,000.
    assert (await post_json(org, team_items(6, "Default"))).status_code == 201


async def test_the_openapi_document_marks_the_operation_experimental(world: World) -> None:
    document = (await world.client.get("/openapi.json")).json()
    operation = document["paths"]["/team/bulk"]["post"]
    assert operation["x-experimental"] is True
    assert "experimental" in operation["summary"].lower()
    content = operation["requestBody"]["content"]
    assert set(content) == {"application/json", "text/csv"}
    ref = content["application/json"]["schema"]["items"]["$ref"]
    assert ref.rsplit("/", 1)[-1] in document["components"]["schemas"]
    assert set(operation["responses"]) >= {"201", "413", "422"}

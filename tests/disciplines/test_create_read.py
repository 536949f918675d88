"""Creating and reading disciplines: basic and full documents, the list with counts."""

from __future__ import annotations

import uuid

import pytest

from tests.disciplines.factories import create_discipline, discipline_document, without_ids
from tests.factories import World

pytestmark = pytest.mark.anyio

ADMIN = {"Check": {"Kind": "Admin", "MaxAttempts": None}, "Hints": []}
"""What a task without a check or hints reads as."""

FULL = {
    "Title": "Cloud",
    "Description": "Cloud basics",
    "Color": "Red",
    "Sequential": False,
    "Resources": [
        {"Title": "Book", "Description": "Read it", "Url": "https://example.org/b", "Kind": "Book"}
    ],
    "Levels": [
        {
            "Title": "L0",
            "Description": "first",
            "Resources": [],
            "Quests": [
                {
                    "Title": "Q0",
                    "Description": "",
                    "Resources": [
                        {
                            "Title": "R",
                            "Description": "",
                            "Url": "http://x.test/a?b=1",
                            "Kind": "Link",
                        }
                    ],
                    "Tasks": [
                        {"Title": "T0", "Description": "d", "Points": 0, "Resources": [], **ADMIN},
                        {
                            "Title": "T1",
                            "Description": "",
                            "Points": 1_000_000,
                            "Resources": [],
                            **ADMIN,
                        },
                        {"Title": "T2", "Description": "", "Points": 7, "Resources": [], **ADMIN},
                    ],
                },
                {"Title": "Q1", "Description": "", "Resources": [], "Tasks": []},
            ],
        },
        {"Title": "L1", "Description": "", "Resources": [], "Quests": []},
    ],
}


async def test_basic_fields_create_an_empty_discipline(world: World) -> None:
    org = world.org()
    response = await world.client.post(
        "/discipline",
        json={"Title": " Basics ", "Description": "Empty", "Color": "purple"},
        headers=org.admin,
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["Title"] == "Basics"
    assert body["Color"] == "Purple"
    assert body["OrganizationId"] == str(org.id)
    assert body["Levels"] == []
    assert body["Resources"] == []
    assert body["CreatedAt"].endswith("Z")
    assert body["UpdatedAt"] == body["CreatedAt"]
    assert response.headers["Location"].endswith(f"/discipline/{body['Id']}")
    read = await world.client.get(response.headers["Location"], headers=org.member)
    assert read.status_code == 200
    assert read.json() == body
    assert read.headers["ETag"] == response.headers["ETag"]


async def test_without_color_the_color_is_null(world: World) -> None:
    org = world.org()
    response = await world.client.post(
        "/discipline", json={"title": "T", "description": "D"}, headers=org.admin
    )
    assert response.status_code == 201, response.text
    assert response.json()["Color"] is None


async def test_full_document_round_trips_every_field_in_order(world: World) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, FULL)
    read = await world.client.get(f"/discipline/{created['Id']}", headers=org.member)
    assert read.status_code == 200
    tree = read.json()
    assert tree == created
    expected = dict(FULL)
    got = without_ids(tree)
    for key in ("Id", "OrganizationId", "CreatedAt", "UpdatedAt"):
        got.pop(key, None)
    assert got == expected
    level = tree["Levels"][0]
    assert [lv["Order"] for lv in tree["Levels"]] == [0, 1]
    assert [q["Order"] for q in level["Quests"]] == [0, 1]
    assert [t["Order"] for t in level["Quests"][0]["Tasks"]] == [0, 1, 2]
    assert [t["Title"] for t in level["Quests"][0]["Tasks"]] == ["T0", "T1", "T2"]
    ids = [tree["Id"], tree["Resources"][0]["Id"], level["Id"], level["Quests"][0]["Id"]]
    assert all(uuid.UUID(i) for i in ids)
    assert len(set(ids)) == len(ids)


async def test_defaults_of_optional_node_fields(world: World) -> None:
    org = world.org()
    created = await create_discipline(
        world.client,
        org.admin,
        {
            "Title": "T",
            "Description": "D",
            "Levels": [
                {
                    "Title": "L",
                    "Quests": [
                        {
                            "Title": "Q",
                            "Tasks": [
                                {"Title": "T", "Resources": [{"Title": "R", "Url": "https://a.b"}]}
                            ],
                        }
                    ],
                }
            ],
        },
    )
    level = created["Levels"][0]
    task = level["Quests"][0]["Tasks"][0]
    assert level["Description"] == ""
    assert level["Resources"] == []
    assert task["Points"] == 10
    assert task["Resources"][0]["Kind"] == "Link"
    assert task["Resources"][0]["Description"] == ""
    assert task["Resources"][0]["Url"] == "https://a.b"


async def test_list_has_counts_and_global_plus_own_disciplines(world: World) -> None:
    org, other = world.org(), world.org()
    operator = {"Authorization": f"Bearer {world.operator_token()}"}
    mine = await create_discipline(
        world.client, org.admin, levels=2, quests=3, tasks=4, points=5, resources=0
    )
    empty = await create_discipline(world.client, org.admin, levels=0)
    global_one = await create_discipline(world.client, operator, levels=1, quests=1, tasks=1)
    await create_discipline(world.client, other.admin, levels=1)
    response = await world.client.get("/discipline", headers=org.member)
    assert response.status_code == 200
    listed = response.json()
    assert [d["Id"] for d in listed] == [mine["Id"], empty["Id"], global_one["Id"]]
    first = listed[0]
    assert (first["LevelCount"], first["QuestCount"], first["TaskCount"]) == (2, 6, 24)
    assert first["PointsTotal"] == 120
    assert (listed[1]["LevelCount"], listed[1]["TaskCount"], listed[1]["PointsTotal"]) == (0, 0, 0)
    assert listed[2]["OrganizationId"] is None
    assert "Levels" not in first
    as_operator = await world.client.get("/discipline", headers=operator)
    assert [d["Id"] for d in as_operator.json()] == [global_one["Id"]]


async def test_list_pages_with_link_headers(world: World) -> None:
    org = world.org()
    made = [(await create_discipline(world.client, org.admin, levels=0))["Id"] for _ in range(5)]
    seen: list[str] = []
    url: str | None = "/discipline?limit=2"
    while url:
        response = await world.client.get(url, headers=org.member)
        assert response.status_code == 200
        seen += [d["Id"] for d in response.json()]
        link = response.headers.get("Link")
        url = link[1 : link.index(">")] if link else None
    assert seen == made


async def test_idempotent_post_creates_once(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "Idempotency-Key": "make-cloud-once"}
    body = discipline_document(levels=1)
    first = await world.client.post("/discipline", json=body, headers=headers)
    second = await world.client.post("/discipline", json=body, headers=headers)
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.headers["Location"] == first.headers["Location"]
    listed = (await world.client.get("/discipline", headers=org.member)).json()
    assert [d["Id"] for d in listed] == [first.json()["Id"]]
    other_body = await world.client.post(
        "/discipline", json=discipline_document(levels=2), headers=headers
    )
    assert other_body.status_code == 422

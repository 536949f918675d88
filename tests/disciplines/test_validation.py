"""Every input error of a discipline document names its path; nothing is written."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.disciplines.factories import create_discipline, discipline_document
from tests.factories import Org, World

pytestmark = pytest.mark.anyio


async def _refused(world: World, org: Org, body: Any, status: int = 422) -> dict[str, Any]:
    response = await world.client.post("/discipline", json=body, headers=org.admin)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    listed = await world.client.get("/discipline", headers=org.admin)
    assert listed.json() == [], "a refused document wrote nothing"
    return dict(response.json())


def _fields(problem: dict[str, Any]) -> list[str]:
    return [e["field"] for e in problem["errors"]]


def _message(problem: dict[str, Any], field: str) -> str:
    return next(e["message"] for e in problem["errors"] if e["field"] == field)


@pytest.mark.parametrize("color", ["purple", "GREEN", " Red ", "rEd"])
async def test_colors_match_case_insensitively_and_are_written_canonically(
    world: World, color: str
) -> None:
    org = world.org()
    created = await create_discipline(world.client, org.admin, color=color, levels=0)
    assert created["Color"] == color.strip().capitalize()


@pytest.mark.parametrize("color", ["Blue", "", "Purple!", 3, ["Red"], True])
async def test_other_colors_are_422_naming_the_allowed_values(world: World, color: Any) -> None:
    org = world.org()
    problem = await _refused(world, org, {"Title": "T", "Description": "D", "Color": color})
    assert _fields(problem) == ["Color"]
    message = _message(problem, "Color")
    assert all(name in message for name in ("Purple", "Green", "Red"))


MISSING_CASES: list[tuple[str, list[Any]]] = [
    ("Title", ["Title"]),
    ("Description", ["Description"]),
    ("Levels[1].Title", ["Levels", 1, "Title"]),
    ("Levels[0].Quests[1].Title", ["Levels", 0, "Quests", 1, "Title"]),
    ("Levels[1].Quests[0].Tasks[1].Title", ["Levels", 1, "Quests", 0, "Tasks", 1, "Title"]),
    ("Resources[0].Title", ["Resources", 0, "Title"]),
    ("Resources[0].Url", ["Resources", 0, "Url"]),
    ("Levels[1].Resources[0].Url", ["Levels", 1, "Resources", 0, "Url"]),
    ("Levels[0].Quests[1].Resources[0].Title", ["Levels", 0, "Quests", 1, "Resources", 0, "Title"]),
    (
        "Levels[1].Quests[1].Tasks[0].Resources[0].Url",
        ["Levels", 1, "Quests", 1, "Tasks", 0, "Resources", 0, "Url"],
    ),
]


def _path_text(path: list[Any]) -> str:
    """``["Levels", 0, "Title"]`` → ``Levels[0].Title``, as errors name places."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


def _at(document: dict[str, Any], path: list[Any]) -> tuple[Any, Any]:
    node: Any = document
    for step in path[:-1]:
        node = node[step]
    return node, path[-1]


@pytest.mark.parametrize(("field", "path"), MISSING_CASES, ids=[c[0] for c in MISSING_CASES])
async def test_missing_required_field_names_its_path(
    world: World, field: str, path: list[Any]
) -> None:
    org = world.org()
    document = discipline_document(levels=2, quests=2, tasks=2, resources=1)
    parent, key = _at(document, path)
    del parent[key]
    problem = await _refused(world, org, document)
    assert _fields(problem) == [field]
    assert field in problem["detail"]


@pytest.mark.parametrize("blank", ["", "   "])
@pytest.mark.parametrize(
    "path",
    [["Title"], ["Description"], ["Levels", 0, "Quests", 1, "Tasks", 0, "Title"]],
)
async def test_blank_title_or_description_is_refused(
    world: World, path: list[Any], blank: str
) -> None:
    org = world.org()
    document = discipline_document(levels=1)
    parent, key = _at(document, path)
    parent[key] = blank
    problem = await _refused(world, org, document)
    assert _fields(problem) == [_path_text(path)]


async def test_title_over_200_characters_is_refused(world: World) -> None:
    org = world.org()
    document = discipline_document(levels=1, quests=1, tasks=1)
    document["Levels"][0]["Quests"][0]["Title"] = "x" * 201
    problem = await _refused(world, org, document)
    assert _fields(problem) == ["Levels[0].Quests[0].Title"]
    assert "200" in problem["errors"][0]["message"]
    document["Levels"][0]["Quests"][0]["Title"] = "x" * 200
    created = await create_discipline(world.client, org.admin, document)
    assert created["Levels"][0]["Quests"][0]["Title"] == "x" * 200


@pytest.mark.parametrize("points", [-1, 1_000_001, 1.5, 10.0, "10", None, True])
async def test_points_are_whole_numbers_from_0_to_a_million(world: World, points: Any) -> None:
    org = world.org()
    document = discipline_document(levels=1, quests=1, tasks=2)
    document["Levels"][0]["Quests"][0]["Tasks"][1]["Points"] = points
    problem = await _refused(world, org, document)
    assert _fields(problem) == ["Levels[0].Quests[0].Tasks[1].Points"]


@pytest.mark.parametrize(
    "url", ["ftp://example.org/x", "example.org/x", "/relative", "https://", "javascript:alert(1)"]
)
async def test_resource_urls_are_absolute_http(world: World, url: str) -> None:
    org = world.org()
    document = discipline_document(levels=1, quests=1, tasks=1)
    document["Levels"][0]["Quests"][0]["Tasks"][0]["Resources"][0]["Url"] = url
    problem = await _refused(world, org, document)
    assert _fields(problem) == ["Levels[0].Quests[0].Tasks[0].Resources[0].Url"]
    assert "http" in problem["errors"][0]["message"]


async def test_unknown_fields_are_refused_at_any_depth(world: World) -> None:
    org = world.org()
    document = discipline_document(levels=1, quests=1, tasks=1)
    document["Levels"][0]["Quests"][0]["Tasks"][0]["Pionts"] = 5
    document["Colour"] = "Red"
    problem = await _refused(world, org, document)
    assert sorted(_fields(problem)) == ["Colour", "Levels[0].Quests[0].Tasks[0].Pionts"]


async def test_field_names_ignore_case_at_any_depth(world: World) -> None:
    org = world.org()
    body = {
        "title": "T",
        "DESCRIPTION": "D",
        "levels": [
            {"title": "L", "quests": [{"TITLE": "Q", "tasks": [{"title": "t", "points": 3}]}]}
        ],
    }
    created = await create_discipline(world.client, org.admin, body)
    assert created["Levels"][0]["Quests"][0]["Tasks"][0]["Points"] == 3


async def test_ids_cannot_be_chosen_when_creating(world: World) -> None:
    org = world.org()
    document = discipline_document(levels=1, quests=1, tasks=1)
    document["Levels"][0]["Quests"][0]["Id"] = "0190c7f2-0000-7000-8000-000000000001"
    problem = await _refused(world, org, document)
    assert _fields(problem) == ["Levels[0].Quests[0].Id"]


def _grown(path: list[Any], key: str, count: int) -> dict[str, Any]:
    document = discipline_document(levels=1, quests=1, tasks=1, resources=1)
    node, last = _at(document, [*path, key])
    template = copy.deepcopy(node[last][0])
    node[last] = [copy.deepcopy(template) for _ in range(count)]
    return document


LIMITS = [
    ([], "Levels", 100, "Levels", "100 levels"),
    (["Levels", 0], "Quests", 100, "Levels[0].Quests", "100 quests"),
    (["Levels", 0, "Quests", 0], "Tasks", 100, "Levels[0].Quests[0].Tasks", "100 tasks"),
    ([], "Resources", 50, "Resources", "50 resources"),
    (["Levels", 0], "Resources", 50, "Levels[0].Resources", "50 resources"),
    (
        ["Levels", 0, "Quests", 0],
        "Resources",
        50,
        "Levels[0].Quests[0].Resources",
        "50 resources",
    ),
    (
        ["Levels", 0, "Quests", 0, "Tasks", 0],
        "Resources",
        50,
        "Levels[0].Quests[0].Tasks[0].Resources",
        "50 resources",
    ),
]


@pytest.mark.parametrize(
    ("path", "key", "limit", "field", "words"), LIMITS, ids=[c[3] for c in LIMITS]
)
async def test_count_limits_are_422_naming_the_limit(
    world: World, path: list[Any], key: str, limit: int, field: str, words: str
) -> None:
    org = world.org()
    at_limit = await create_discipline(world.client, org.admin, _grown(path, key, limit))
    node, last = _at(at_limit, [*path, key])
    assert len(node[last]) == limit
    await world.client.delete(f"/discipline/{at_limit['Id']}", headers=org.admin)
    problem = await _refused(world, org, _grown(path, key, limit + 1))
    assert _fields(problem) == [field]
    assert words in problem["errors"][0]["message"]
    assert f"got {limit + 1}" in problem["errors"][0]["message"]


async def test_a_document_over_5_mib_is_413_naming_the_limit(world: World) -> None:
    org = world.org()
    document = discipline_document(levels=1)
    document["Description"] = "x" * (5 * 1024 * 1024)
    response = await world.client.post(
        "/discipline",
        content=json.dumps(document),
        headers={**org.admin, "Content-Type": "application/json"},
    )
    assert response.status_code == 413
    assert "5 MiB" in response.json()["detail"]
    assert (await world.client.get("/discipline", headers=org.admin)).json() == []


async def test_malformed_json_is_400(world: World) -> None:
    org = world.org()
    response = await world.client.post(
        "/discipline",
        content=b'{"Title": "T",',
        headers={**org.admin, "Content-Type": "application/json"},
    )
    assert response.status_code == 400

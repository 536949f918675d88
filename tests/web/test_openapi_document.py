"""The API document as a client author reads it: readable operation ids and summaries,
a valid example of every body, timestamps as date-time, every error documented as a
problem document whose type URI is a page of the service."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from questline.app import create_app
from questline.bulk.schemas import CSV_HEADER
from questline.teams.schemas import TeamCreate
from questline.web.problems import CATALOGUE

pytestmark = pytest.mark.anyio

METHODS = ("get", "put", "post", "delete", "patch")


async def _document(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


def _models_with_examples() -> dict[type[BaseModel], list[Any]]:
    """Every model of the service with examples of its own (``web.schemas.examples``)."""
    assert create_app  # every domain's schemas are imported
    found: dict[type[BaseModel], list[Any]] = {}
    todo = list(BaseModel.__subclasses__())
    while todo:
        model = todo.pop()
        todo.extend(model.__subclasses__())
        extra = model.model_config.get("json_schema_extra")
        if model.__module__.startswith("questline.") and isinstance(extra, dict):
            found[model] = list(extra.get("examples") or [])
    return found


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, item[method])
        for path, item in document["paths"].items()
        for method in METHODS
        if method in item
    ]


async def test_every_operation_has_a_readable_unique_operation_id_and_summary(
    client: httpx.AsyncClient,
) -> None:
    operations = _operations(await _document(client))
    ids = [op["operationId"] for _, _, op in operations]
    assert len(ids) == len(set(ids))
    for method, path, op in operations:
        assert re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", op["operationId"]), (method, path)
        assert op["summary"], (method, path)
        assert "_" not in op["summary"], (method, path)
    named = {(m, p): op["operationId"] for m, p, op in operations}
    assert named[("get", "/team")] == "listTeams"
    assert named[("post", "/team")] == "createTeam"
    assert named[("post", "/team/{team_id}/members")] == "addTeamMember"
    assert named[("get", "/team/{team_id}/overview")] == "getTeamOverview"


async def test_every_body_has_an_example_that_its_model_accepts(
    client: httpx.AsyncClient,
) -> None:
    document = await _document(client)
    for method, path, op in _operations(document):
        content = op.get("requestBody", {}).get("content", {})
        json_body = content.get("application/json")
        if json_body is not None:
            assert "example" in json_body or "examples" in json_body, (method, path)
        for status, response in op["responses"].items():
            media = response.get("content", {}).get("application/json")
            if status.startswith("2") and media is not None:
                assert "example" in media, (method, path, status)
    # Each example is valid for its model (requests as clients send them, responses as
    # the service writes them), and every component that shows one is such a model.
    models = _models_with_examples()
    for model, examples in models.items():
        assert examples, model
        for example in examples:
            model.model_validate(example)
    named = {model.__name__ for model in models}
    schemas = document["components"]["schemas"]
    assert {name for name, schema in schemas.items() if "examples" in schema} <= named
    assert len(named) >= 25
    bulk_json = document["paths"]["/team/bulk"]["post"]["requestBody"]["content"]
    for item in bulk_json["application/json"]["example"]:
        TeamCreate.model_validate(item)
    bulk = document["paths"]["/team/bulk"]["post"]["requestBody"]["content"]
    assert bulk["text/csv"]["example"].startswith(CSV_HEADER)
    # The regex noise Swagger UI made up for `POST /team` is replaced by a real example.
    create = document["paths"]["/team"]["post"]["requestBody"]["content"]["application/json"]
    assert create["example"]["name"] == "Rockets"


async def test_the_examples_are_accepted_by_the_service(
    client: httpx.AsyncClient, world: Any
) -> None:
    org = world.org()
    member = await org.create_member("ada@example.org")
    document = await _document(client)
    example = document["components"]["schemas"]["TeamCreate"]["examples"][0]
    body = {**example, "members": [member["Id"]]}
    created = await client.post("/team", json=body, headers=org.admin)
    assert created.status_code == 201, created.text
    for key in ("name", "tags"):
        assert created.json()[key.capitalize()] == body[key]


async def test_timestamps_are_date_time(client: httpx.AsyncClient) -> None:
    schemas = (await _document(client))["components"]["schemas"]
    found = 0
    for name, schema in schemas.items():
        for prop_name, prop in schema.get("properties", {}).items():
            if prop_name == "At" or re.fullmatch(r"[A-Z][A-Za-z]*[a-z]At", prop_name):
                options = [prop, *prop.get("anyOf", [])]
                strings = [o for o in options if o.get("type") == "string"]
                if not strings:
                    continue  # a read-only input field of any type, ignored by the service
                assert all(o.get("format") == "date-time" for o in strings), (name, prop_name)
                found += 1
    assert found >= 10


async def test_every_error_is_a_problem_document_whose_type_is_a_page(
    client: httpx.AsyncClient,
) -> None:
    document = await _document(client)
    types: set[str] = set()
    for method, path, op in _operations(document):
        for status, response in op["responses"].items():
            if int(status) < 400:
                continue
            content = response["content"]
            if path.startswith("/scim/"):  # SCIM's own error document (RFC 7644 §3.12)
                if list(content) == ["application/problem+json"]:  # the server's, before it
                    assert int(status) in (400, 408, 414, 431), (method, path, status)
                    continue
                assert list(content) == ["application/scim+json"], (method, path, status)
                assert content["application/scim+json"]["example"]["status"] == status
                continue
            if op.get("x-error-media-type") == "text/html":  # a browser's pages (LTI)
                if list(content) == ["application/problem+json"]:  # the boundary's, before
                    assert int(status) in (400, 408, 413, 414, 415, 429, 431, 503), (method, path)
                    continue
                assert list(content) == ["text/html"], (method, path, status)
                continue
            assert list(content) == ["application/problem+json"], (method, path, status)
            example = content["application/problem+json"]["example"]
            assert example["status"] == int(status)
            assert "Problem types:" in response["description"]
            types.add(example["type"])
    assert len(types) >= 8
    for uri in types:
        assert uri.startswith("/problems/")  # relative: QUESTLINE_PUBLIC_URL is unset
        page = await client.get(uri)
        assert page.status_code == 200, uri
        assert page.headers["content-type"].startswith("text/html")
    index = await client.get("/problems")
    assert index.status_code == 200
    for problem in CATALOGUE:
        assert f'href="problems/{problem.slug}"' in index.text
    missing = await client.get("/problems/no-such-problem")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("application/problem+json")


async def test_a_real_error_names_a_type_the_service_explains(
    client: httpx.AsyncClient, world: Any
) -> None:
    org = world.org()
    refused = await client.post("/team", json={"name": ""}, headers=org.admin)
    assert refused.status_code == 422
    uri = refused.json()["type"]
    assert uri == "/problems/validation-error"
    page = await client.get("/problems/validation-error")
    assert page.status_code == 200
    assert "Invalid input" in page.text
    assert "Content-Security-Policy" in page.headers

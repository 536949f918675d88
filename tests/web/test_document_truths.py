"""What the API document says and the service does agree, rule by rule (issue 26, point 5):

* every path's ``Allow`` lists that path's methods (``/team/bulk`` is no team id);
* ``If-Match`` has the form the document states (``*`` or entity tags): another form is
  422, a well-formed stale one 412;
* ``POST /auth/session`` takes exactly one of ``Code`` and ``IdToken`` (``oneOf``);
* the refusals of the server boundary (408, 414, 431, 503) are documented on every
  operation, with the problem document they carry.

tests/web/test_schemathesis_cli.py holds the service to the whole document."""

from __future__ import annotations

import re
from typing import Any

import httpx
import jsonschema_rs
import pytest
from fastapi import FastAPI

from questline.web.errors import ProblemDocument
from questline.web.preconditions import IF_MATCH_PATTERN
from tests.factories import World

pytestmark = pytest.mark.anyio

METHODS = ("get", "put", "post", "delete", "patch")


def _document(app: FastAPI) -> dict[str, Any]:
    return app.openapi()


def _concrete(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids.get(m.group(1), "0" * 8), path)


async def test_options_lists_each_paths_own_methods(app: FastAPI, world: World) -> None:
    """``OPTIONS`` on every path of the document: 405 whose ``Allow`` is exactly the
    document's methods there (and ``HEAD`` wherever ``GET`` is)."""
    org = world.org()
    team = await org.create_team()
    ids = {"team_id": team["Id"]}
    for path, item in _document(app)["paths"].items():
        documented = {m.upper() for m in METHODS if m in item}
        if "GET" in documented:
            documented.add("HEAD")
        response = await world.client.options(_concrete(path, ids), headers=org.admin)
        assert response.status_code == 405, path
        allowed = {m.strip() for m in response.headers["Allow"].split(",")}
        assert allowed == documented, path


async def test_the_bulk_path_is_no_team_id(world: World) -> None:
    org = world.org()
    for method in ("GET", "PATCH", "DELETE", "PUT", "OPTIONS"):
        response = await world.client.request(method, "/team/bulk", headers=org.admin)
        assert response.status_code == 405, method
        assert response.headers["Allow"] == "POST", method
        assert response.headers["Content-Type"] == "application/problem+json"
    head = await world.client.head("/team/bulk", headers=org.admin)
    assert head.status_code == 405
    # The team routes still answer for a team (and 404 for an id that is none).
    team = await org.create_team()
    assert (await world.client.get(f"/team/{team['Id']}", headers=org.admin)).status_code == 200
    unknown = await world.client.get("/team/bulky", headers=org.admin)
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("*", True),
        ('"abc.1"', True),
        ('W/"abc.1"', True),
        ('"a", W/"b" ,"c"', True),
        ('""', True),
        ("abc", False),
        ('"abc', False),
        ('"a"b"', False),
        ('w/"abc"', False),
        ('"a",', False),
        ('* , "a"', False),
        ('"tab\tin"', False),
    ],
)
def test_the_if_match_form(value: str, valid: bool) -> None:
    assert (re.fullmatch(IF_MATCH_PATTERN, value) is not None) is valid


async def test_if_match_of_another_form_is_422_and_a_stale_one_412(
    app: FastAPI, world: World
) -> None:
    org = world.org()
    team = await org.create_team()
    url = f"/team/{team['Id']}"
    for path, method in (("/team/{team_id}", "patch"), ("/discipline/{discipline_id}", "put")):
        parameters = _document(app)["paths"][path][method]["parameters"]
        header = next(p for p in parameters if p["name"].lower() == "if-match")
        # A string of that form: never ``null`` (a header is absent or has a value).
        assert header["schema"]["type"] == "string"
        assert header["schema"]["pattern"] == IF_MATCH_PATTERN
        assert "anyOf" not in header["schema"]
    malformed = await world.client.patch(
        url, json={"name": "Renamed"}, headers={**org.admin, "If-Match": "0"}
    )
    assert malformed.status_code == 422, malformed.text
    assert malformed.json()["errors"][0]["field"].lower() == "if-match"
    stale = await world.client.patch(
        url, json={"name": "Renamed"}, headers={**org.admin, "If-Match": '"stale.1"'}
    )
    assert stale.status_code == 412
    etag = (await world.client.get(url, headers=org.admin)).headers["ETag"]
    current = await world.client.patch(
        url, json={"name": "Renamed"}, headers={**org.admin, "If-Match": etag}
    )
    assert current.status_code == 200, current.text
    gone = await world.client.delete(url, headers={**org.admin, "If-Match": "nope"})
    assert gone.status_code == 422


async def test_a_session_is_asked_for_with_exactly_one_of_code_and_id_token(
    app: FastAPI, world: World
) -> None:
    schema = _document(app)["components"]["schemas"]["SessionCreate"]
    assert schema["oneOf"] == [{"required": ["Code"]}, {"required": ["IdToken"]}]
    validator = jsonschema_rs.Draft202012Validator(schema)
    org = world.org()
    bodies: list[tuple[Any, bool]] = [
        ({"Code": "abc"}, True),
        ({"IdToken": org.member_token}, True),
        ({}, False),
        ({"Code": "abc", "IdToken": "def"}, False),
        ({"Code": None, "IdToken": org.member_token}, False),
        ({"Code": " abc"}, False),
        ({"Code": ""}, False),
    ]
    for body, valid in bodies:
        assert validator.is_valid(body) is valid, body
        response = await world.client.post("/auth/session", json=body)
        if valid:
            assert response.status_code in (201, 401), (body, response.text)
        else:
            assert response.status_code == 422, (body, response.text)


async def test_every_operation_documents_the_server_boundarys_refusals(app: FastAPI) -> None:
    document = _document(app)
    problem = document["components"]["schemas"]["ProblemDocument"]
    assert "instance" not in problem["required"]
    for path, item in document["paths"].items():
        for method in METHODS:
            if method not in item:
                continue
            responses = item[method]["responses"]
            for status in ("408", "414", "431", "503"):
                assert status in responses, (method, path, status)
            if path not in ("/healthz", "/readyz"):
                assert "400" in responses, (method, path)
    # What the server writes itself (no path known, no request id) is such a document.
    from questline.web.server_protocol import plain_problem

    raw = plain_problem(414, "URI Too Long", "The query string is too long.", "/problems/")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"content-type: application/problem+json" in head
    refusal = httpx.Response(414, content=body).json()
    ProblemDocument.model_validate(refusal)
    resolved = {**problem, "components": document["components"]}
    jsonschema_rs.validate(resolved, refusal)

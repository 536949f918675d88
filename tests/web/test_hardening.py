"""Hardening: security headers on every response, JSON nesting and string length bounds."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.factories import World

pytestmark = pytest.mark.anyio

BASE_HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


def _assert_hardened(response: httpx.Response, *, authenticated: bool) -> None:
    for name, value in BASE_HEADERS.items():
        assert response.headers.get(name) == value, (response.request.url, name)
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    if authenticated:
        assert response.headers["cache-control"] == "no-store"


async def test_every_kind_of_response_carries_the_security_headers(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    client = world.client
    authenticated = [
        await client.get("/team", headers=org.member),  # 200
        await client.post("/team", json={"name": "X"}, headers=org.member),  # 403
        await client.get(f"/team/{team['Id']}x", headers=org.member),  # 404
        await client.post("/team", json={"nme": "typo"}, headers=org.admin),  # 422
        await client.post(
            "/team", content=b"{", headers={**org.admin, "content-type": "application/json"}
        ),  # 400
        await client.post(
            "/team", content=b"x", headers={**org.admin, "content-type": "text/plain"}
        ),  # 415
        await client.get("/team", headers={"Authorization": "Bearer nonsense"}),  # 401
    ]
    assert [r.status_code for r in authenticated] == [200, 403, 404, 422, 400, 415, 401]
    for response in authenticated:
        _assert_hardened(response, authenticated=True)
        assert response.headers["content-security-policy"].startswith("default-src 'none'")
    anonymous = [
        await client.get("/healthz"),
        await client.get("/openapi.json"),
        await client.get("/nowhere"),
        await client.get("/team"),
    ]
    assert [r.status_code for r in anonymous] == [200, 200, 404, 401]
    for response in anonymous:
        _assert_hardened(response, authenticated=False)


async def test_the_docs_page_runs_only_its_own_scripts(client: httpx.AsyncClient) -> None:
    page = await client.get("/docs")
    assert page.status_code == 200
    policy = page.headers["content-security-policy"]
    script_src = re.search(r"script-src ([^;]*)", policy)
    assert script_src is not None
    allowed = script_src.group(1).split()
    assert "'unsafe-inline'" not in allowed
    assert "'unsafe-eval'" not in allowed
    inline = re.findall(r"<script>(.*?)</script>", page.text, flags=re.DOTALL)
    assert inline, "the page has its init script inline"
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in allowed
    for src in re.findall(r'<script src="([^"]+)"', page.text):
        assert src.startswith("/"), "scripts come from this server, never a CDN"
        asset = await client.get(src)
        assert asset.status_code == 200
        _assert_hardened(asset, authenticated=False)
    assert "connect-src 'self'" in policy  # it fetches /openapi.json


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


async def test_json_nested_deeper_than_32_levels_is_refused_before_parsing(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "content-type": "application/json"}
    too_deep = '{"name": "Deep", "tags": ' + _nested(32) + "}"  # 33 levels with the object
    refused = await world.client.post("/team", content=too_deep, headers=headers)
    assert refused.status_code == 400
    assert refused.headers["content-type"] == "application/problem+json"
    assert "nested deeper than 32" in refused.json()["detail"]
    just_fits = '{"name": "Deep", "tags": ' + _nested(31) + "}"
    parsed = await world.client.post("/team", content=just_fits, headers=headers)
    assert parsed.status_code == 422  # reached validation: tags are strings
    brackets_in_a_string = {"name": "[[[[" * 20 + "]]]]" * 5}
    created = await world.client.post("/team", json=brackets_in_a_string, headers=org.admin)
    assert created.status_code == 201, created.text
    huge = await world.client.post("/team", content=_nested(200_000), headers=headers)
    assert huge.status_code == 400
    assert [t["Name"] for t in await org.teams()] == [brackets_in_a_string["name"]]


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = document["components"]["schemas"][name]
    return schema


def _unbounded_strings(
    document: dict[str, Any], schema: dict[str, Any], where: str, seen: set[str]
) -> list[str]:
    """Paths of string schemas without ``maxLength`` (enums and UUIDs are bounded)."""
    ref = schema.get("$ref")
    if ref:
        if ref in seen:
            return []
        seen = seen | {ref}
    schema = _resolve(document, schema)
    found: list[str] = []
    for key in ("anyOf", "oneOf", "allOf"):
        for index, option in enumerate(schema.get(key, [])):
            found += _unbounded_strings(document, option, f"{where}<{index}>", seen)
    if schema.get("type") == "string":
        bounded = "maxLength" in schema or "enum" in schema or "const" in schema
        if not bounded and schema.get("format") not in ("uuid", "date-time"):
            found.append(where)
    for name, child in schema.get("properties", {}).items():
        found += _unbounded_strings(document, child, f"{where}.{name}", seen)
    if isinstance(schema.get("items"), dict):
        found += _unbounded_strings(document, schema["items"], f"{where}[]", seen)
    if isinstance(schema.get("additionalProperties"), dict):
        found += _unbounded_strings(document, schema["additionalProperties"], f"{where}{{}}", seen)
    return found


BROWSER_REDIRECTS = frozenset(
    {
        "GET /auth/oidc/callback",
        "GET /auth/oidc/{organization_id}/login",
        "GET /lti/login",
        "GET /lti/view/{view}",
    }
)
"""Single sign-on's browser routes: whatever their query holds (bounded by the server's
query limit, 414), they answer with a redirect, never a JSON refusal (docs/identity.md):
an over-long ``state`` or ``code`` is an unknown login, an over-long ``next`` goes to
``/ui/``. A ``maxLength`` would turn those into 422 documents in the browser. So do the
LTI login's and target link URIs' (docs/platforms.md): a refusal page, or the
leaderboard."""


async def test_every_input_string_has_a_maximum_length(app: FastAPI) -> None:
    document = app.openapi()
    unbounded: list[str] = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            label = f"{method.upper()} {path}"
            if label in BROWSER_REDIRECTS:
                continue
            for parameter in operation.get("parameters", []):
                if parameter["in"] in ("query", "header"):
                    where = f"{label} {parameter['in']} {parameter['name']}"
                    unbounded += _unbounded_strings(document, parameter["schema"], where, set())
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                if media == "text/csv":
                    continue  # the whole body as one string: bounded by its size limit (413)
                if "schema" in content:
                    where = f"{label} body ({media})"
                    unbounded += _unbounded_strings(document, content["schema"], where, set())
    assert not unbounded, "input strings without maxLength:\n" + "\n".join(unbounded)

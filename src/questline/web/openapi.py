"""The OpenAPI document's shared parts and the self-hosted API docs (no CDN).

Routes name the problems particular to them with ``problem_responses``; ``install_openapi``
then completes every operation with the problems that the shared machinery can return
(authentication, body guards, validation, rate limits, an unreachable database), so that
the document is true for routes added later too, and a schema-driven fuzzer can hold the
service to it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import swagger_ui_bundle
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from questline.web.edge import Edge, EdgeTable
from questline.web.errors import PROBLEM_MEDIA_TYPE, ProblemDocument
from questline.web.internals import declared_routes

_DESCRIPTIONS = {
    400: "Malformed JSON, or JSON nested too deeply; or a `Host` this server does not serve "
    "(`QUESTLINE_ALLOWED_HOSTS`).",
    401: "Missing, expired or invalid bearer token.",
    403: "The token's role may not do this.",
    404: "No such resource in the caller's organization.",
    409: "Conflicts with the current state (e.g. a duplicate name).",
    412: "`If-Match` does not match the current `ETag`.",
    413: "The body is larger than allowed.",
    415: "The body is not JSON.",
    422: "Invalid input; `errors` names each field.",
    429: "Too many requests; see `Retry-After` and the `RateLimit-*` headers.",
    503: "The database is unreachable, the request timed out, or this server handles as many "
    "connections or requests as it takes; see `Retry-After` (absent when the server refused "
    "the connection itself).",
    408: "The request's headers (or its body) did not arrive in time; the connection is closed.",
    414: "The request line or the query string is longer than the server takes "
    "(`QUESTLINE_SERVER_MAX_REQUEST_LINE_BYTES`, `QUESTLINE_SERVER_MAX_QUERY_BYTES`); "
    "the connection is closed.",
    431: "A header line, or the headers together, are larger than the server takes "
    "(`QUESTLINE_SERVER_MAX_HEADER_LINE_BYTES`, `QUESTLINE_SERVER_MAX_HEADER_BYTES`); "
    "the connection is closed.",
}
_NO_BODY_400 = "A `Host` this server does not serve (`QUESTLINE_ALLOWED_HOSTS`)."
SERVER_REFUSALS = frozenset({408, 414, 431, 503})
SERVER_BOUNDARY = frozenset({408, 414, 431})
"""Refused by the server before any route runs (problem documents whatever the route)."""
"""What the server boundary (``questline.web.server_protocol``) answers for any path, before
the application routes the request: every operation can get them."""
_PROBLEM_REF = "#/components/schemas/ProblemDocument"
_HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "`Bearer`."}},
    429: {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}},
    503: {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}},
}
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _problem_entry(status: int, description: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "description": description or _DESCRIPTIONS[status],
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": _PROBLEM_REF}}},
    }
    if status in _HEADERS:
        entry["headers"] = _HEADERS[status]
    return entry


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the problem documents an operation can return."""
    return {status: _problem_entry(status) for status in statuses}


def _shared_problems(rules: Edge, operation: dict[str, Any]) -> set[int]:
    """The problems that the shared machinery can return for this operation (``rules``:
    what its route declared at the edge, ``web.edge``)."""
    statuses: set[int] = set(SERVER_REFUSALS)
    if Edge.NOT_RATE_LIMITED not in rules:
        statuses.add(429)
    if Edge.ANY_HOST not in rules:  # a Host not in QUESTLINE_ALLOWED_HOSTS
        statuses.add(400)
    if operation.get("security"):
        statuses |= {401, 403}
    if "requestBody" in operation:
        statuses |= {400, 413, 415, 422}
    locations = {p.get("in") for p in operation.get("parameters", [])}
    if locations & {"query", "header"}:
        statuses.add(422)
    if "path" in locations:
        statuses.add(404)
    return statuses


def _is_fastapi_validation_default(entry: dict[str, Any]) -> bool:
    schema = entry.get("content", {}).get("application/json", {}).get("schema", {})
    return bool(schema.get("$ref", "").endswith("/HTTPValidationError"))


OWN_ERRORS = "x-error-media-type"
"""An operation marked with this extension (its value: the media type) documents every
error response itself, in a format of its own protocol (SCIM's ``application/scim+json``):
the shared problems are neither added nor rewritten."""


def complete_problem_responses(document: dict[str, Any], edge: EdgeTable) -> dict[str, Any]:
    """Add the shared problems to every operation (idempotent; returns ``document``)."""
    for path, item in document.get("paths", {}).items():
        rules = edge.of(path)
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            if OWN_ERRORS in operation:  # FastAPI's 422 is not what such a route sends
                for key in [k for k, v in responses.items() if _is_fastapi_validation_default(v)]:
                    del responses[key]
                boundary = set(SERVER_BOUNDARY)
                if Edge.ANY_HOST not in rules:
                    boundary.add(400)  # a foreign Host, refused before the route
                for status in sorted(boundary):  # the server's, before any route
                    responses.setdefault(str(status), _problem_entry(status))
                continue
            for status in sorted(_shared_problems(rules, operation)):
                key = str(status)
                if key not in responses or _is_fastapi_validation_default(responses[key]):
                    bodiless = status == 400 and "requestBody" not in operation
                    responses[key] = _problem_entry(status, _NO_BODY_400 if bodiless else None)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    problem = ProblemDocument.model_json_schema(
        by_alias=True, ref_template="#/components/schemas/{model}", mode="serialization"
    )
    for name, definition in problem.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    schemas.setdefault("ProblemDocument", problem)
    for default in ("HTTPValidationError", "ValidationError"):  # in this order
        if f'"#/components/schemas/{default}"' not in json.dumps(document):
            schemas.pop(default, None)
    return document


OPERATION_IDS: dict[str, str] = {
    "healthz": "checkLiveness",
    "readyz": "checkReadiness",
    "read_session": "getSession",
    "add_member": "addTeamMember",
    "remove_member": "removeTeamMember",
    "set_survey": "setTeamSurvey",
    "get_overview": "getTeamOverview",
}
"""Where the endpoint function's name, in camelCase, would not read well."""


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _humanize(operation_id: str) -> str:
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", operation_id).lower()
    return words[:1].upper() + words[1:]


def _api_routes(routes: Sequence[Any]) -> Iterator[APIRoute]:
    """Every ``APIRoute``, also inside included routers (FastAPI keeps those nested)."""
    for _, route in declared_routes(routes):
        if isinstance(route, APIRoute):
            yield route


def name_operations(app: FastAPI) -> None:
    """A readable ``operationId`` (``listTeams``, ``createTeam``) and summary for every
    operation that has none of its own."""
    for route in _api_routes(app.routes):
        if route.include_in_schema:
            if route.operation_id is None:
                route.operation_id = OPERATION_IDS.get(route.name, camel(route.name))
            if route.summary is None:
                route.summary = _humanize(route.operation_id)


def _is_timestamp(name: str) -> bool:
    return name == "At" or (name.endswith("At") and name[:-2][-1:].islower())


def _mark_date_time(schema: dict[str, Any]) -> None:
    if schema.get("type") == "string":
        schema.setdefault("format", "date-time")
    for option in schema.get("anyOf", []):
        if option.get("type") == "string":
            option.setdefault("format", "date-time")


def _component(schema: dict[str, Any]) -> tuple[str | None, bool]:
    """The component a body schema names (``$ref``, optional, or array of), and whether
    it is an array."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1], False
    for option in schema.get("anyOf", []):
        if "$ref" in option:
            return str(option["$ref"]).rsplit("/", 1)[-1], False
    if schema.get("type") == "array" and "$ref" in schema.get("items", {}):
        return str(schema["items"]["$ref"]).rsplit("/", 1)[-1], True
    return None, False


def _models(annotation: Any, seen: set[type[BaseModel]]) -> Iterator[type[BaseModel]]:
    """The models in a type (``list[Team]``, ``Flag | None``) and, in turn, in their
    fields."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen.add(annotation)
        yield annotation
        for field in annotation.model_fields.values():
            yield from _models(field.annotation, seen)
    for argument in typing.get_args(annotation):
        yield from _models(argument, seen)


def body_examples(app: FastAPI) -> dict[str, list[Any]]:
    """The examples each body model of the app's routes carries (``web.schemas.examples``),
    by component name."""
    seen: set[type[BaseModel]] = set()
    found: dict[str, list[Any]] = {}
    for route in _api_routes(app.routes):
        annotations = [route.response_model]
        if route.body_field is not None:
            annotations.append(route.body_field.field_info.annotation)
        for annotation in annotations:
            for model in _models(annotation, seen):
                extra = model.model_config.get("json_schema_extra")
                listed = extra.get("examples") if isinstance(extra, dict) else None
                if isinstance(listed, list) and listed:
                    found[model.__name__] = listed
    return found


def polish_document(
    document: dict[str, Any], public_url: str | None, examples: Mapping[str, list[Any]]
) -> dict[str, Any]:
    """Timestamps as ``date-time``, an example for every body (the first of its model's
    ``examples``, by component name), and every error response with its problem types
    (each a page of the service) and an example."""
    from questline.web.problems import example_problem, slugs_for, type_base

    schemas = document.get("components", {}).get("schemas", {})
    for component, values in examples.items():
        if component in schemas:  # FastAPI's copy has lost every null (``exclude_none``)
            schemas[component]["examples"] = values
    by_name = {component: values[0] for component, values in examples.items()}
    for schema in schemas.values():
        for name, prop in schema.get("properties", {}).items():
            if _is_timestamp(name):
                _mark_date_time(prop)
    for path, item in document.get("paths", {}).items():
        for method in _METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None and "example" not in body and "examples" not in body:
                name, many = _component(body.get("schema", {}))
                if name in by_name:
                    body["example"] = [by_name[name]] if many else by_name[name]
            for status, response in operation.get("responses", {}).items():
                content = response.get("content", {})
                if status.startswith("2") and "application/json" in content:
                    media = content["application/json"]
                    name, many = _component(media.get("schema", {}))
                    if name in by_name and "example" not in media:
                        media["example"] = [by_name[name]] if many else by_name[name]
                elif status.isdigit() and int(status) >= 400 and OWN_ERRORS not in operation:
                    if PROBLEM_MEDIA_TYPE not in content:
                        response.update(_problem_entry(int(status)))
                        content = response["content"]
                    code = int(status)
                    types = slugs_for(code) or [f"http-{code}"]
                    listed = ", ".join(f"[`{t}`]({type_base(public_url)}{t})" for t in types)
                    if "Problem types:" not in response.get("description", ""):
                        response["description"] = (
                            f"{response['description']} Problem types: {listed}."
                        )
                    content[PROBLEM_MEDIA_TYPE]["example"] = example_problem(public_url, code, path)
    return document


def install_openapi(app: FastAPI, public_url: str | None = None) -> None:
    """Serve the completed document at ``/openapi.json`` (and from ``app.openapi()``),
    each body with the examples its model carries.

    Operations are named now, with every route in place: FastAPI copies a route's
    declaration the first time it opens an included router (the first request routed
    into one, or the fast lane's plan), and a name given later would not be seen."""
    generate = app.openapi
    name_operations(app)
    edge = EdgeTable.from_routes(app.routes)

    def openapi() -> dict[str, Any]:
        listed = body_examples(app)
        return polish_document(complete_problem_responses(generate(), edge), public_url, listed)

    app.openapi = openapi  # type: ignore[method-assign]


def _inline_script_hashes(html: str) -> list[str]:
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.DOTALL)
    return [
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in scripts
    ]


def docs_policy(html: str) -> str:
    """The docs page's CSP: its own assets, the API, and its one inline script by hash."""
    scripts = " ".join(["'self'", *_inline_script_hashes(html)])
    return (
        f"default-src 'none'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'none'"
    )


def mount_docs(app: FastAPI) -> None:
    """Serve Swagger UI from the package's own copy of its assets."""
    app.mount(
        "/docs-assets",
        StaticFiles(directory=swagger_ui_bundle.swagger_ui_path),
        name="docs-assets",
    )
    page = get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="Questline API",
        swagger_js_url="/docs-assets/swagger-ui-bundle.js",
        swagger_css_url="/docs-assets/swagger-ui.css",
        swagger_favicon_url="/docs-assets/favicon-32x32.png",
    )
    html = bytes(page.body).decode()
    policy = docs_policy(html)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(html, headers={"Content-Security-Policy": policy})

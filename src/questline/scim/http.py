"""The HTTP side of ``/scim/v2`` shared by its routes: the OpenAPI entries of SCIM
errors, ``application/scim+json`` answers, bodies, paging and attribute selection."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Header, Query, Request, Response
from scim2_models import (
    Group,
    InvalidSyntaxException,
    InvalidValueException,
    ResponseParameters,
    User,
)

from questline.scim import resources, service
from questline.scim.errors import SCIM_MEDIA_TYPE, error_document
from questline.web.links import service_link
from questline.web.openapi import OWN_ERRORS
from questline.web.state import app_state

BASE_PATH = "/scim/v2"

_ERRORS = {
    400: "invalidSyntax, invalidValue, invalidFilter, invalidPath, noTarget, mutability",
    401: "no scim token, or one that does not verify",
    403: "a token of another role (only scim tokens provision)",
    404: "no such resource in your organization",
    409: "uniqueness: userName, e-mail or team name already taken",
    412: "If-Match names a version that is no longer current",
    413: "the body is too large",
    415: "the body is not JSON",
    501: "not implemented",
    429: "too many requests (Retry-After)",
    503: "the database is unavailable (Retry-After)",
}


def documented(*statuses: int, body: dict[str, Any] | None = None) -> dict[str, Any]:
    responses: dict[int | str, Any] = {
        code: {
            "description": f"SCIM error: {_ERRORS[code]}.",
            "content": {
                SCIM_MEDIA_TYPE: {
                    "schema": {"type": "object"},
                    "example": error_document(code, _ERRORS[code].split(":")[0] + "."),
                }
            },
        }
        for code in sorted({401, 403, 429, 503, *statuses})
    }
    extra: dict[str, Any] = {OWN_ERRORS: SCIM_MEDIA_TYPE}
    if body is not None:
        extra["requestBody"] = {
            "required": True,
            "content": {
                SCIM_MEDIA_TYPE: {"schema": {"type": "object"}, "example": body},
                "application/json": {"schema": {"type": "object"}, "example": body},
            },
        }
    return {"responses": responses, "openapi_extra": extra, "response_class": Response}


USER_EXAMPLE: dict[str, Any] = {
    "schemas": [resources.USER_SCHEMA],
    "userName": "ada@example.org",
    "externalId": "00u1ab2cd3EF4gh5i6j7",
    "name": {"givenName": "Ada"},
    "emails": [{"value": "ada@example.org", "primary": True}],
    "active": True,
}
GROUP_EXAMPLE: dict[str, Any] = {
    "schemas": [resources.GROUP_SCHEMA],
    "displayName": "Rockets",
    "externalId": "00g1ab2cd3EF4gh5i6j7",
    "members": [{"value": "0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b30"}],
}
PATCH_EXAMPLE: dict[str, Any] = {
    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
    "Operations": [
        {"op": "remove", "path": 'members[value eq "0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b30"]'}
    ],
}
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"


def base_url(request: Request) -> str:
    return service_link(request, BASE_PATH)


def answer(
    document: dict[str, Any], *, status_code: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        json.dumps(document, separators=(",", ":")),
        status_code=status_code,
        media_type=SCIM_MEDIA_TYPE,
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


async def read_body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except ValueError:
        raise InvalidSyntaxException(detail="The body is not valid JSON.") from None


def page_of(start_index: int | None, count: int | None, request: Request) -> service.Page:
    """RFC 7644 §3.4.2.4: a start below 1 is 1, a negative count 0; at most the
    configured maximum."""
    most = app_state(request).settings.scim_max_results
    wanted = most if count is None else max(0, min(count, most))
    return service.Page(start_index=max(1, start_index or 1), count=wanted)


def response_parameters(
    model: type[User[Any]] | type[Group], attributes: str | None, excluded: str | None
) -> ResponseParameters[Any] | None:
    if not attributes and not excluded:
        return None
    try:
        return ResponseParameters[model].model_validate(  # type: ignore[valid-type]
            {"attributes": attributes, "excludedAttributes": excluded}
        )
    except ValueError as exc:
        raise InvalidValueException(detail=f"attributes/excludedAttributes: {exc}") from None


def render(
    resource: User[Any] | Group, parameters: ResponseParameters[Any] | None
) -> dict[str, Any]:
    if parameters is None:
        return resources.dump(resource)
    return resources.dump(resource, response_parameters=parameters)


def single(
    resource: User[Any] | Group,
    parameters: ResponseParameters[Any] | None = None,
    *,
    status_code: int = 200,
    location: bool = False,
) -> Response:
    document = render(resource, parameters)
    version = resources.dump(resource)["meta"]["version"] if parameters else None
    version = version or document["meta"]["version"]
    headers = {"ETag": version}
    if location and resource.meta and resource.meta.location:
        headers["Location"] = resource.meta.location
    return answer(document, status_code=status_code, headers=headers)


def listing(
    total: int, page: service.Page, items: list[Any], parameters: ResponseParameters[Any] | None
) -> Response:
    return answer(
        {
            "schemas": [LIST_SCHEMA],
            "totalResults": total,
            "startIndex": page.start_index,
            "itemsPerPage": len(items),
            "Resources": [render(item, parameters) for item in items],
        }
    )


Filter = Annotated[str | None, Query(alias="filter", max_length=service.filters.MAX_FILTER_LENGTH)]
StartIndex = Annotated[int | None, Query(alias="startIndex", description="1-based.")]
Count = Annotated[
    int | None, Query(alias="count", description="At most QUESTLINE_SCIM_MAX_RESULTS.")
]
Attributes = Annotated[str | None, Query(alias="attributes", max_length=600)]
Excluded = Annotated[str | None, Query(alias="excludedAttributes", max_length=600)]
SortBy = Annotated[str | None, Query(alias="sortBy", max_length=100, description="Ignored.")]
SortOrder = Annotated[str | None, Query(alias="sortOrder", max_length=20, description="Ignored.")]
IfMatch = Annotated[str | None, Header(max_length=500)]

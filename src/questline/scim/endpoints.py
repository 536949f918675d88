"""``/scim/v2``: a directory provisions members (``Users``) and teams (``Groups``).

Every route takes the organization's ``scim`` token (``ScimOf``) and nothing else takes
it; bodies and answers are ``application/scim+json`` (plain JSON is read too); errors
are SCIM error documents (``questline.scim.errors``). ``POST /organization/scim-token``
is the admin's way to mint that token from the dashboard.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request, Response, status
from scim2_models import (
    Context,
    Group,
    InvalidSyntaxException,
    InvalidValueException,
    ListResponse,
    NotFoundException,
    NotImplementedException,
    ResourceType,
    ResponseParameters,
    Schema,
    User,
)

from questline.auth.authentication import identity_of
from questline.scim import resources, service
from questline.scim.errors import SCIM_MEDIA_TYPE, ScimRoute, error_document
from questline.scim.schemas import ScimToken, ScimTokenCreate
from questline.web.access import AdminOf, ScimOf
from questline.web.errors import Conflict
from questline.web.identity import Role
from questline.web.links import service_link
from questline.web.openapi import OWN_ERRORS, problem_responses
from questline.web.routing import SessionDep, TransactionalRoute
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


def _documented(*statuses: int, body: dict[str, Any] | None = None) -> dict[str, Any]:
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


def _success(description: str, example: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {SCIM_MEDIA_TYPE: {"example": example}}}


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

router = APIRouter(prefix=BASE_PATH, tags=["scim"], route_class=ScimRoute)


def base_url(request: Request) -> str:
    return service_link(request, BASE_PATH)


def _answer(
    document: dict[str, Any], *, status_code: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        json.dumps(document, separators=(",", ":")),
        status_code=status_code,
        media_type=SCIM_MEDIA_TYPE,
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


async def _body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except ValueError:
        raise InvalidSyntaxException(detail="The body is not valid JSON.") from None


def _page(start_index: int | None, count: int | None, request: Request) -> service.Page:
    """RFC 7644 §3.4.2.4: a start below 1 is 1, a negative count 0; at most the
    configured maximum."""
    most = app_state(request).settings.scim_max_results
    wanted = most if count is None else max(0, min(count, most))
    return service.Page(start_index=max(1, start_index or 1), count=wanted)


def _parameters(
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


def _render(
    resource: User[Any] | Group, parameters: ResponseParameters[Any] | None
) -> dict[str, Any]:
    if parameters is None:
        return resources.dump(resource)
    return resources.dump(resource, response_parameters=parameters)


def _single(
    resource: User[Any] | Group,
    parameters: ResponseParameters[Any] | None = None,
    *,
    status_code: int = 200,
    location: bool = False,
) -> Response:
    document = _render(resource, parameters)
    version = resources.dump(resource)["meta"]["version"] if parameters else None
    version = version or document["meta"]["version"]
    headers = {"ETag": version}
    if location and resource.meta and resource.meta.location:
        headers["Location"] = resource.meta.location
    return _answer(document, status_code=status_code, headers=headers)


def _list(
    total: int, page: service.Page, items: list[Any], parameters: ResponseParameters[Any] | None
) -> Response:
    return _answer(
        {
            "schemas": [LIST_SCHEMA],
            "totalResults": total,
            "startIndex": page.start_index,
            "itemsPerPage": len(items),
            "Resources": [_render(item, parameters) for item in items],
        }
    )


Filter = Annotated[str | None, Query(alias="filter", max_length=service.filters.MAX_FILTER_LENGTH)]
StartIndex = Annotated[int | None, Query(alias="startIndex", description="1-based.")]
Count = Annotated[
    int | None, Query(alias="count", description="At most QUESTLINE_SCIM_MAX_RESULTS.")
]
Attributes = Annotated[str | None, Query(alias="attributes", max_length=1000)]
Excluded = Annotated[str | None, Query(alias="excludedAttributes", max_length=1000)]
SortBy = Annotated[str | None, Query(alias="sortBy", max_length=200, description="Ignored.")]
SortOrder = Annotated[str | None, Query(alias="sortOrder", max_length=20, description="Ignored.")]
IfMatch = Annotated[str | None, Header(max_length=500)]


# Discovery ----------------------------------------------------------------------------


@router.get(
    "/ServiceProviderConfig",
    summary="SCIM service provider configuration",
    **_documented(),
)
async def scim_service_provider_config(request: Request, tenant: ScimOf) -> Response:
    """What this SCIM service supports: PATCH, filters, ETags; no bulk, sorting or
    password changes."""
    settings = app_state(request).settings
    config = resources.service_provider_config(base_url(request), settings.scim_max_results)
    return _answer(config.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@router.get("/ResourceTypes", summary="SCIM resource types", **_documented())
async def scim_list_resource_types(request: Request, tenant: ScimOf) -> Response:
    """`User` (members) and `Group` (teams)."""
    found = resources.resource_types(base_url(request))
    listed = ListResponse[ResourceType](
        total_results=len(found), start_index=1, items_per_page=len(found), resources=found
    )
    return _answer(listed.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@router.get("/ResourceTypes/{name}", summary="One SCIM resource type", **_documented(404))
async def scim_get_resource_type(name: str, request: Request, tenant: ScimOf) -> Response:
    """`User` or `Group`."""
    for found in resources.resource_types(base_url(request)):
        if found.id == name:
            return _answer(found.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    raise NotFoundException(detail=f"No resource type {name[:64]!r}.")


@router.get("/Schemas", summary="SCIM schemas", **_documented())
async def scim_list_schemas(request: Request, tenant: ScimOf) -> Response:
    """The User and Group schemas, with the attributes Questline keeps."""
    found = resources.published_schemas(base_url(request))
    listed = ListResponse[Schema](
        total_results=len(found), start_index=1, items_per_page=len(found), resources=found
    )
    return _answer(listed.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@router.get("/Schemas/{schema_id}", summary="One SCIM schema", **_documented(404))
async def scim_get_schema(schema_id: str, request: Request, tenant: ScimOf) -> Response:
    """The schema named by its URN."""
    for found in resources.published_schemas(base_url(request)):
        if found.id == schema_id:
            return _answer(found.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    raise NotFoundException(detail=f"No schema {schema_id[:100]!r}.")


@router.post("/.search", summary="Search across resource types", **_documented(501))
async def scim_search_all(tenant: ScimOf) -> Response:
    """Not offered (RFC 7644 §3.4.3 makes it optional): search `/Users` or `/Groups`."""
    raise NotImplementedException(
        detail="Searching several resource types at once is not supported; query /Users or /Groups."
    )


# Users ------------------------------------------------------------------------------


@router.get(
    "/Users",
    summary="List or filter SCIM users",
    **_documented(400),
)
async def scim_list_users(
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    filter: Filter = None,
    start_index: StartIndex = None,
    count: Count = None,
    attributes: Attributes = None,
    excluded_attributes: Excluded = None,
    sort_by: SortBy = None,
    sort_order: SortOrder = None,
) -> Response:
    """The organization's members as SCIM users, filtered (`userName`, `emails.value`,
    `externalId`, `name.givenName`, `active`, `id`; `eq ne co sw ew gt ge lt le pr`,
    `and or not`) and paged (`startIndex`, `count`)."""
    parameters = _parameters(User, attributes, excluded_attributes)
    page = _page(start_index, count, request)
    total, users = await service.list_users(
        session, org_id=tenant.org_id, filter=filter, page=page, base_url=base_url(request)
    )
    return _list(total, page, users, parameters)


@router.post(
    "/Users",
    status_code=status.HTTP_201_CREATED,
    summary="Create a SCIM user",
    **_documented(400, 409, 413, 415, body=USER_EXAMPLE),
)
async def scim_create_user(request: Request, tenant: ScimOf, session: SessionDep) -> Response:
    """A new member of the organization (409 `uniqueness` when the `userName` or e-mail
    is taken)."""
    user = service.parse_resource(User, await _body(request), Context.RESOURCE_CREATION_REQUEST)
    member = await service.create_user(session, org_id=tenant.org_id, user=user)
    created = await service.user_of(session, member, base_url(request))
    return _single(created, status_code=201, location=True)


@router.get("/Users/{user_id}", summary="Read a SCIM user", **_documented(400, 404))
async def scim_get_user(
    user_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    attributes: Attributes = None,
    excluded_attributes: Excluded = None,
) -> Response:
    """One member as a SCIM user, with its `ETag` (`meta.version`)."""
    parameters = _parameters(User, attributes, excluded_attributes)
    member = await service.get_member(session, org_id=tenant.org_id, user_id=user_id)
    return _single(await service.user_of(session, member, base_url(request)), parameters)


async def _current_user(
    session: SessionDep, request: Request, tenant: ScimOf, user_id: str, if_match: str | None
) -> User[Any]:
    member = await service.get_member(
        session, org_id=tenant.org_id, user_id=user_id, for_update=True
    )
    current = await service.user_of(session, member, base_url(request))
    service.check_if_match(resources.dump(current)["meta"]["version"], if_match)
    return current


@router.put(
    "/Users/{user_id}",
    summary="Replace a SCIM user",
    **_documented(400, 404, 409, 412, 413, 415, body=USER_EXAMPLE),
)
async def scim_replace_user(
    user_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Replace the member's attributes (`active: false` deactivates it: out of sign-in
    and of its teams, which keep their progress)."""
    await _current_user(session, request, tenant, user_id, if_match)
    user = service.parse_resource(User, await _body(request), Context.RESOURCE_REPLACEMENT_REQUEST)
    member = await service.get_member(session, org_id=tenant.org_id, user_id=user_id)
    member = await service.write_user(session, member=member, user=user)
    return _single(await service.user_of(session, member, base_url(request)))


@router.patch(
    "/Users/{user_id}",
    summary="Patch a SCIM user",
    **_documented(
        400,
        404,
        409,
        412,
        413,
        415,
        body={
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "replace", "path": "active", "value": False}],
        },
    ),
)
async def scim_patch_user(
    user_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Add, remove or replace attributes (RFC 7644 §3.5.2)."""
    current = await _current_user(session, request, tenant, user_id, if_match)
    patch = service.parse_patch(User, await _body(request))
    patched = service.apply_patch(patch, service.patch_target(current))
    member = await service.get_member(session, org_id=tenant.org_id, user_id=user_id)
    member = await service.write_user(session, member=member, user=patched)
    return _single(await service.user_of(session, member, base_url(request)))


@router.delete(
    "/Users/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a SCIM user",
    **_documented(404, 412),
)
async def scim_delete_user(
    user_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Remove the member from the organization: out of its teams (which keep their
    progress and history) and out of sign-in."""
    await _current_user(session, request, tenant, user_id, if_match)
    member = await service.get_member(session, org_id=tenant.org_id, user_id=user_id)
    await service.delete_user(session, member=member)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# Groups -----------------------------------------------------------------------------


@router.get("/Groups", summary="List or filter SCIM groups", **_documented(400))
async def scim_list_groups(
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    filter: Filter = None,
    start_index: StartIndex = None,
    count: Count = None,
    attributes: Attributes = None,
    excluded_attributes: Excluded = None,
    sort_by: SortBy = None,
    sort_order: SortOrder = None,
) -> Response:
    """The organization's teams as SCIM groups, filtered (`displayName`, `externalId`,
    `id`, `members.value`) and paged; `excludedAttributes=members` leaves the member
    lists out (and unread)."""
    parameters = _parameters(Group, attributes, excluded_attributes)
    page = _page(start_index, count, request)
    wants_members = parameters is None or _wants_members(parameters)
    total, groups = await service.list_groups(
        session,
        org_id=tenant.org_id,
        filter=filter,
        page=page,
        base_url=base_url(request),
        with_members=wants_members,
    )
    return _list(total, page, groups, parameters)


def _wants_members(parameters: ResponseParameters[Any]) -> bool:
    excluded = {str(p).lower() for p in parameters.excluded_attributes or []}
    wanted = {str(p).lower().split(".")[0] for p in parameters.attributes or []}
    if parameters.attributes:
        return "members" in wanted
    return "members" not in excluded


@router.post(
    "/Groups",
    status_code=status.HTTP_201_CREATED,
    summary="Create a SCIM group",
    **_documented(400, 409, 413, 415, body=GROUP_EXAMPLE),
)
async def scim_create_group(request: Request, tenant: ScimOf, session: SessionDep) -> Response:
    """A new team with the members listed (409 `uniqueness` when the name is taken)."""
    group = service.parse_resource(Group, await _body(request), Context.RESOURCE_CREATION_REQUEST)
    team = await service.create_group(session, org_id=tenant.org_id, group=group)
    created = await service.group_of(session, team, base_url(request))
    return _single(created, status_code=201, location=True)


@router.get("/Groups/{group_id}", summary="Read a SCIM group", **_documented(400, 404))
async def scim_get_group(
    group_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    attributes: Attributes = None,
    excluded_attributes: Excluded = None,
) -> Response:
    """One team as a SCIM group, with its members and `ETag`."""
    parameters = _parameters(Group, attributes, excluded_attributes)
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id)
    return _single(await service.group_of(session, team, base_url(request)), parameters)


async def _current_group(
    session: SessionDep, request: Request, tenant: ScimOf, group_id: str, if_match: str | None
) -> Group:
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id, for_update=True)
    current = await service.group_of(session, team, base_url(request))
    service.check_if_match(resources.dump(current)["meta"]["version"], if_match)
    return current


@router.put(
    "/Groups/{group_id}",
    summary="Replace a SCIM group",
    **_documented(400, 404, 409, 412, 413, 415, body=GROUP_EXAMPLE),
)
async def scim_replace_group(
    group_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Rename the team and set its members to exactly those listed."""
    await _current_group(session, request, tenant, group_id, if_match)
    group = service.parse_resource(
        Group, await _body(request), Context.RESOURCE_REPLACEMENT_REQUEST
    )
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id)
    team = await service.write_group(session, team=team, group=group)
    return _single(await service.group_of(session, team, base_url(request)))


@router.patch(
    "/Groups/{group_id}",
    summary="Patch a SCIM group",
    **_documented(400, 404, 409, 412, 413, 415, body=PATCH_EXAMPLE),
)
async def scim_patch_group(
    group_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Add, remove or replace members (`members[value eq "…"]` paths too), the name or
    `externalId`."""
    current = await _current_group(session, request, tenant, group_id, if_match)
    patch = service.parse_patch(Group, await _body(request))
    patched = service.apply_patch(patch, current)
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id)
    team = await service.write_group(session, team=team, group=patched)
    return _single(await service.group_of(session, team, base_url(request)))


@router.delete(
    "/Groups/{group_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a SCIM group",
    **_documented(404, 412),
)
async def scim_delete_group(
    group_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Delete the team, as `DELETE /team/{id}` does (its memberships and progress go;
    its members stay in the organization)."""
    await _current_group(session, request, tenant, group_id, if_match)
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id)
    await service.delete_group(session, team=team)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# The admin's token ------------------------------------------------------------------

token_router = APIRouter(prefix="/organization", tags=["scim"], route_class=TransactionalRoute)


@token_router.post(
    "/scim-token",
    status_code=status.HTTP_201_CREATED,
    response_model=ScimToken,
    summary="Mint the organization's SCIM token",
    responses=problem_responses(400, 401, 403, 409, 415, 422),
)
async def create_scim_token(
    request: Request,
    tenant: AdminOf,
    data: Annotated[ScimTokenCreate | None, Body()] = None,
) -> ScimToken:
    """A bearer token with the role `scim` for the organization's directory (Okta, Entra
    ID, Keycloak…): it can call `/scim/v2` and nothing else. Shown once; mint a new one
    to rotate (the old one stays valid until it expires)."""
    days = (data or ScimTokenCreate()).days
    lifetime = dt.timedelta(days=days)
    try:
        token = identity_of(request).tokens.mint(
            role=Role.SCIM,
            org_id=tenant.org_id,
            subject=f"scim:{tenant.caller.subject}"[:200],
            lifetime=lifetime,
        )
    except RuntimeError as exc:
        raise Conflict(
            "Tokens are issued by your identity provider here, not by Questline: give the "
            "directory a token with the role scim from it."
        ) from exc
    return ScimToken(
        token=token,
        base_url=base_url(request),
        expires_at=dt.datetime.now(dt.UTC) + lifetime,
    )

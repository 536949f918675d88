"""SCIM discovery (RFC 7644 §4): what the service supports, its resource types and
their schemas; and ``/.search``, which it does not offer."""

from __future__ import annotations

from typing import TypeVar

from fastapi import APIRouter, Request, Response
from scim2_models import (
    Context,
    ListResponse,
    NotFoundException,
    NotImplementedException,
    ResourceType,
    Schema,
    ScimObject,
)

from questline.scim import resources
from questline.scim.errors import ScimRoute
from questline.scim.http import answer, base_url, documented
from questline.web.access import ScimOf
from questline.web.state import app_state

router = APIRouter(route_class=ScimRoute)

R = TypeVar("R", ResourceType, Schema)


def _answer(document: ScimObject) -> Response:
    """Every discovery document is dumped as a query's response."""
    return answer(document.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


def _all(listing: type[ListResponse[R]], found: list[R]) -> Response:
    """The whole list as one page: discovery lists are short and not paged."""
    n = len(found)
    return _answer(listing(total_results=n, start_index=1, items_per_page=n, resources=found))


def _one(found: list[R], wanted: str, *, missing: str) -> Response:
    for item in found:
        if item.id == wanted:
            return _answer(item)
    raise NotFoundException(detail=missing)


@router.get(
    "/ServiceProviderConfig",
    summary="SCIM service provider configuration",
    **documented(),
)
async def scim_service_provider_config(request: Request, tenant: ScimOf) -> Response:
    """What this SCIM service supports: PATCH, filters, ETags; no bulk, sorting or
    password changes."""
    settings = app_state(request).settings
    return _answer(resources.service_provider_config(base_url(request), settings.scim_max_results))


@router.get("/ResourceTypes", summary="SCIM resource types", **documented())
async def scim_list_resource_types(request: Request, tenant: ScimOf) -> Response:
    """`User` (members) and `Group` (teams)."""
    return _all(ListResponse[ResourceType], resources.resource_types(base_url(request)))


@router.get("/ResourceTypes/{name}", summary="One SCIM resource type", **documented(404))
async def scim_get_resource_type(name: str, request: Request, tenant: ScimOf) -> Response:
    """`User` or `Group`."""
    found = resources.resource_types(base_url(request))
    return _one(found, name, missing=f"No resource type {name[:64]!r}.")


@router.get("/Schemas", summary="SCIM schemas", **documented())
async def scim_list_schemas(request: Request, tenant: ScimOf) -> Response:
    """The User and Group schemas, with the attributes Questline keeps."""
    return _all(ListResponse[Schema], resources.published_schemas(base_url(request)))


@router.get("/Schemas/{schema_id}", summary="One SCIM schema", **documented(404))
async def scim_get_schema(schema_id: str, request: Request, tenant: ScimOf) -> Response:
    """The schema named by its URN."""
    found = resources.published_schemas(base_url(request))
    return _one(found, schema_id, missing=f"No schema {schema_id[:100]!r}.")


@router.post("/.search", summary="Search across resource types", **documented(501))
async def scim_search_all(tenant: ScimOf) -> Response:
    """Not offered (RFC 7644 §3.4.3 makes it optional): search `/Users` or `/Groups`."""
    raise NotImplementedException(
        detail="Searching several resource types at once is not supported; query /Users or /Groups."
    )

"""SCIM discovery (RFC 7644 §4): what the service supports, its resource types and
their schemas; and ``/.search``, which it does not offer."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from scim2_models import (
    Context,
    ListResponse,
    NotFoundException,
    NotImplementedException,
    ResourceType,
    Schema,
)

from questline.scim import resources
from questline.scim.errors import ScimRoute
from questline.scim.http import answer, base_url, documented
from questline.web.access import ScimOf
from questline.web.state import app_state

router = APIRouter(route_class=ScimRoute)


@router.get(
    "/ServiceProviderConfig",
    summary="SCIM service provider configuration",
    **documented(),
)
async def scim_service_provider_config(request: Request, tenant: ScimOf) -> Response:
    """What this SCIM service supports: PATCH, filters, ETags; no bulk, sorting or
    password changes."""
    settings = app_state(request).settings
    config = resources.service_provider_config(base_url(request), settings.scim_max_results)
    return answer(config.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@router.get("/ResourceTypes", summary="SCIM resource types", **documented())
async def scim_list_resource_types(request: Request, tenant: ScimOf) -> Response:
    """`User` (members) and `Group` (teams)."""
    found = resources.resource_types(base_url(request))
    listed = ListResponse[ResourceType](
        total_results=len(found), start_index=1, items_per_page=len(found), resources=found
    )
    return answer(listed.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@router.get("/ResourceTypes/{name}", summary="One SCIM resource type", **documented(404))
async def scim_get_resource_type(name: str, request: Request, tenant: ScimOf) -> Response:
    """`User` or `Group`."""
    for found in resources.resource_types(base_url(request)):
        if found.id == name:
            return answer(found.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    raise NotFoundException(detail=f"No resource type {name[:64]!r}.")


@router.get("/Schemas", summary="SCIM schemas", **documented())
async def scim_list_schemas(request: Request, tenant: ScimOf) -> Response:
    """The User and Group schemas, with the attributes Questline keeps."""
    found = resources.published_schemas(base_url(request))
    listed = ListResponse[Schema](
        total_results=len(found), start_index=1, items_per_page=len(found), resources=found
    )
    return answer(listed.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@router.get("/Schemas/{schema_id}", summary="One SCIM schema", **documented(404))
async def scim_get_schema(schema_id: str, request: Request, tenant: ScimOf) -> Response:
    """The schema named by its URN."""
    for found in resources.published_schemas(base_url(request)):
        if found.id == schema_id:
            return answer(found.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE))
    raise NotFoundException(detail=f"No schema {schema_id[:100]!r}.")


@router.post("/.search", summary="Search across resource types", **documented(501))
async def scim_search_all(tenant: ScimOf) -> Response:
    """Not offered (RFC 7644 §3.4.3 makes it optional): search `/Users` or `/Groups`."""
    raise NotImplementedException(
        detail="Searching several resource types at once is not supported; query /Users or /Groups."
    )

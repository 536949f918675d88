"""``GET /audit``: the organization's audit log (admin only). Nothing edits or deletes
an entry: there is no other route."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Query, Response

from questline.audit import schemas, service
from questline.audit.models import AuditEntry
from questline.web import csvexport
from questline.web.access import AdminOf
from questline.web.errors import FieldError, Unprocessable
from questline.web.openapi import problem_responses
from questline.web.pagination import (
    BoundedPagingDep,
)
from questline.web.routing import SessionDep, TransactionalRoute
from questline.web.schemas import InputDateTime

router = APIRouter(tags=["audit"], route_class=TransactionalRoute)


def to_schema(entry: AuditEntry) -> schemas.AuditEntry:
    return schemas.AuditEntry.model_validate(entry)


def to_row(entry: schemas.AuditEntry) -> schemas.AuditEntryRow:
    return schemas.AuditEntryRow(
        **entry.model_dump(exclude={"changes"}), changes=orjson.dumps(entry.changes).decode()
    )


@router.get(
    "/audit",
    response_model=list[schemas.AuditEntry],
    responses={**csvexport.openapi(schemas.AuditEntryRow), **problem_responses(401, 403, 422)},
)
async def list_audit_entries(
    tenant: AdminOf,
    session: SessionDep,
    paging: BoundedPagingDep,
    actor: Annotated[
        str | None, Query(max_length=255, description="Only this actor's (subject) changes.")
    ] = None,
    action: Annotated[
        str | None, Query(max_length=64, description="Only this action, e.g. `team.renamed`.")
    ] = None,
    target: Annotated[
        str | None, Query(max_length=64, description="Only changes of this resource (its id).")
    ] = None,
    start: Annotated[
        InputDateTime | None,
        Query(alias="from", description="Changes made at or after this time (RFC 3339)."),
    ] = None,
    end: Annotated[
        InputDateTime | None,
        Query(alias="to", description="Changes made at or before this time (RFC 3339)."),
    ] = None,
) -> list[schemas.AuditEntry] | Response:
    """Every change made in the organization through the API, the dashboard or a
    provider (SCIM, SSO), newest first: when, who (subject, role, and how: token,
    session, provider), what (`Action`, the target's type and id, the fields before and
    after; secrets never), and the request's id. Progress completions are not repeated
    here (they carry who recorded them). Filters combine; paged (`limit`, default 100,
    at most 1000; the next page in the `Link` header). With `Accept: text/csv`: the page
    as CSV (`Changes` as JSON text). Entries are kept `QUESTLINE_AUDIT_RETENTION_DAYS`
    (365) days; nothing else edits or deletes them."""
    request = paging.request
    repeated = [
        name
        for name in dict.fromkeys(request.query_params)
        if len(request.query_params.getlist(name)) > 1
    ]
    if repeated:  # each filter takes one value: a repeat must not quietly keep the last
        raise Unprocessable(
            f"Query parameters given more than once: {', '.join(repeated)}.",
            errors=[FieldError(field=name, message="Give it once.") for name in repeated],
        )
    if start is not None and end is not None and start > end:
        raise Unprocessable(
            "'from' is after 'to'.",
            errors=[FieldError(field="from", message="Must not be after 'to'.")],
        )
    filters = service.Filters(actor=actor, action=action, target=target, start=start, end=end)
    rows = await service.list_entries(
        session, org_id=tenant.org_id, filters=filters, page=paging.page
    )
    entries = [to_schema(r) for r in paging.rows(rows, service.cursor_of)]
    if csvexport.wants_csv(request):
        return csvexport.export(
            schemas.AuditEntryRow, [to_row(e) for e in entries], "audit.csv", paging.response
        )
    return entries

"""``/organization/xapi``: the organization's learning record store (admin only)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request, Response, status

from questline.outbound import calls
from questline.storage.db import utcnow
from questline.web.access import AdminOf
from questline.web.errors import PublicUrlRequired
from questline.web.openapi import problem_responses
from questline.web.pagination import PagingDep
from questline.web.routing import SessionDep, TransactionalRoute
from questline.web.state import app_state
from questline.xapi import registration, schemas, sealing, sending, statements
from questline.xapi.statements import Iris

router = APIRouter(prefix="/organization/xapi", tags=["xapi"], route_class=TransactionalRoute)


def _iris(request: Request) -> Iris:
    public_url = app_state(request).settings.public_url
    if public_url is None:
        raise PublicUrlRequired(
            "xAPI statements name their activities by IRIs under this service's address: "
            "set QUESTLINE_PUBLIC_URL."
        )
    return Iris(public_url)


@router.put(
    "",
    response_model=schemas.Lrs,
    responses={
        201: {"description": "Registered.", "model": schemas.Lrs},
        **problem_responses(400, 401, 403, 413, 415, 422),
    },
)
async def put_lrs(
    request: Request,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.LrsSettings,
) -> schemas.Lrs:
    """Register (201) or replace (200) the LRS that receives the organization's xAPI
    statements: every completion, withdrawal (`voided`) and level or discipline
    completion from now on (docs/platforms.md, "xAPI").

    `Endpoint` must be http(s) and resolve to public addresses only: loopback, private
    and link-local targets are refused (422) unless the server sets
    `QUESTLINE_XAPI_ALLOW_PRIVATE_URLS=true`. The password or token is never returned."""
    lrs, created = await registration.put_lrs(
        session, org_id=tenant.org_id, data=data, settings=app_state(request).settings
    )
    if created:
        response.status_code = status.HTTP_201_CREATED
    return await registration.to_schema(session, lrs, _iris(request))


@router.get("", response_model=schemas.Lrs, responses=problem_responses(401, 403, 404))
async def get_lrs(request: Request, tenant: AdminOf, session: SessionDep) -> schemas.Lrs:
    """The registered LRS (without its secret), the statements waiting and failed."""
    lrs = await registration.get_lrs(session, org_id=tenant.org_id)
    return await registration.to_schema(session, lrs, _iris(request))


@router.delete(
    "", status_code=status.HTTP_204_NO_CONTENT, responses=problem_responses(401, 403, 404)
)
async def delete_lrs(tenant: AdminOf, session: SessionDep) -> Response:
    """Stop sending statements: the LRS is forgotten with the statements not yet sent."""
    lrs = await registration.get_lrs(session, org_id=tenant.org_id, for_update=True)
    await registration.delete_lrs(session, lrs=lrs)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/test", response_model=schemas.LrsTest, responses=problem_responses(401, 403, 404))
async def test_lrs(request: Request, tenant: AdminOf, session: SessionDep) -> schemas.LrsTest:
    """Send one statement (`<caller> experienced <the connection test>`) to the LRS now
    and report its answer: `Ok` is true on a 2xx. An LRS that cannot be reached is
    reported too (`Error`), not an error of this request."""
    settings = app_state(request).settings
    lrs = await registration.get_lrs(session, org_id=tenant.org_id)
    statement_id = uuid.uuid4()
    statement = statements.test(
        _iris(request), id=statement_id, subject=tenant.caller.subject, timestamp=utcnow()
    )
    try:
        authorization = sending.authorization(settings, lrs)
    except sealing.Unreadable as exc:
        return schemas.LrsTest(
            ok=False, status_code=None, answer=None, error=str(exc), statement_id=statement_id
        )
    async with calls.client(timeout=settings.xapi_timeout_seconds, max_connections=1) as http:
        answer = await sending.post_statements(
            http,
            endpoint=lrs.endpoint,
            authorization=authorization,
            statements=[statement],
            seconds=settings.xapi_timeout_seconds,
            allow_private=settings.xapi_allow_private_urls,
        )
    return schemas.LrsTest(
        ok=answer.verdict is sending.Verdict.STORED,
        status_code=answer.status_code,
        answer=answer.text if answer.status_code is not None else None,
        error=answer.text if answer.status_code is None else None,
        statement_id=statement_id,
    )


@router.get(
    "/failures",
    response_model=list[schemas.Failure],
    responses=problem_responses(401, 403, 404, 422),
)
async def list_failures(
    tenant: AdminOf, session: SessionDep, paging: PagingDep
) -> list[schemas.Failure]:
    """Statements the LRS refused (a 4xx for the statement alone) or that failed every
    attempt, newest first, with the LRS's answer (opt-in paging: `limit`, `after`).
    They block nothing: the other statements are delivered."""
    await registration.get_lrs(session, org_id=tenant.org_id)
    rows = await registration.list_failures(session, org_id=tenant.org_id, page=paging.page)
    return [registration.failure_schema(r) for r in paging.rows(rows, lambda r: [str(r.id)])]

"""The organization's LRS registration (its secret sealed), what it shows (statements
pending and failed) and the failures list."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit
from questline.config import Settings
from questline.organizations.service import ensure_organization
from questline.outbound import addresses
from questline.storage.db import insert_ignoring_conflicts, utcnow
from questline.web.errors import FieldError, Unprocessable
from questline.web.lookups import one_or_not_found
from questline.web.pagination import PageRequest, keyset_page
from questline.web.schemas import shown_row
from questline.xapi import schemas, sealing
from questline.xapi.models import LrsConnection, StatementStatus, XapiStatement
from questline.xapi.statements import Iris


async def check_endpoint(url: str, *, allow_private: bool) -> None:
    try:
        await addresses.check(url, allow_private=allow_private)
    except addresses.UnsafeUrl as exc:
        raise Unprocessable(
            str(exc), errors=[FieldError(field="Endpoint", message=str(exc))]
        ) from exc


async def get_lrs(
    session: AsyncSession, *, org_id: uuid.UUID, for_update: bool = False
) -> LrsConnection:
    query = select(LrsConnection).where(LrsConnection.organization_id == org_id)
    return await one_or_not_found(session, query, kind="LRS", for_update=for_update)


async def put_lrs(
    session: AsyncSession, *, org_id: uuid.UUID, data: schemas.LrsSettings, settings: Settings
) -> tuple[LrsConnection, bool]:
    """Register or replace the organization's LRS (its secret sealed); True when new."""
    await check_endpoint(data.endpoint, allow_private=settings.xapi_allow_private_urls)
    await ensure_organization(session, org_id)
    now = utcnow()
    # Insert-if-absent, then lock the row: two first PUTs at once never collide (the
    # second waits for the first and replaces it).
    inserted = await session.execute(
        insert_ignoring_conflicts(session, LrsConnection.__table__, ["organization_id"])
        .values(organization_id=org_id, endpoint=data.endpoint, created_at=now, updated_at=now)
        .returning(LrsConnection.organization_id)
    )
    created = inserted.first() is not None
    found = await session.scalar(
        select(LrsConnection)
        .where(LrsConnection.organization_id == org_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    assert found is not None
    found.endpoint = data.endpoint
    found.username = data.username
    found.password = (
        sealing.seal(settings, data.password, organization=str(org_id)) if data.password else None
    )
    found.token = (
        sealing.seal(settings, data.token, organization=str(org_id)) if data.token else None
    )
    found.failing_since = None
    found.last_error = None
    found.updated_at = now
    await session.flush()
    await audit.record(  # the secret never: only whether one is set
        session,
        organization_id=org_id,
        action="xapi.registered" if created else "xapi.changed",
        target=("lrs", org_id),
        after={"Endpoint": data.endpoint, "Username": data.username},
    )
    return found, created


async def delete_lrs(session: AsyncSession, *, lrs: LrsConnection) -> None:
    """Forget the LRS and every statement still waiting for it (or refused by it)."""
    await session.execute(
        delete(XapiStatement).where(XapiStatement.organization_id == lrs.organization_id)
    )
    await session.delete(lrs)
    await session.flush()
    await audit.record(
        session,
        organization_id=lrs.organization_id,
        action="xapi.removed",
        target=("lrs", lrs.organization_id),
        before={"Endpoint": lrs.endpoint},
    )


async def to_schema(session: AsyncSession, lrs: LrsConnection, iris: Iris) -> schemas.Lrs:
    counts = dict(
        (
            await session.execute(
                select(XapiStatement.status, func.count())
                .where(
                    XapiStatement.organization_id == lrs.organization_id,
                    XapiStatement.status != StatementStatus.SENT,
                )
                .group_by(XapiStatement.status)
            )
        ).all()
    )
    return shown_row(
        schemas.Lrs,
        lrs,
        auth="Bearer" if lrs.token else "Basic",
        activity_base_iri=iris.activities,
        pending=int(counts.get(StatementStatus.PENDING, 0)),
        failed=int(counts.get(StatementStatus.FAILED, 0)),
    )


def failure_schema(row: XapiStatement) -> schemas.Failure:
    return shown_row(schemas.Failure, row, statement_id=row.id)


async def list_failures(
    session: AsyncSession, *, org_id: uuid.UUID, page: PageRequest
) -> list[XapiStatement]:
    """The statements the LRS refused or that failed every attempt, newest first."""
    query = select(XapiStatement).where(
        XapiStatement.organization_id == org_id,
        XapiStatement.status == StatementStatus.FAILED,
    )
    query = keyset_page(query, page, (XapiStatement.id, uuid.UUID), descending=True)
    return list((await session.scalars(query)).all())

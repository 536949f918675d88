"""Helpers of the xAPI tests: the outbox fanned out and the statements delivered, in
the test's loop; an organization's LRS registered."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from sqlalchemy import func, select

from questline.app import outbox_consumers
from questline.config import Settings
from questline.events import fanout
from questline.storage import tenancy
from questline.storage.db import Database
from questline.xapi.dispatcher import Dispatcher
from questline.xapi.models import StatementStatus, XapiStatement
from tests.factories import Org
from tests.support.ralph_lrs import RalphServer, RalphUser


async def fan_out(settings: Settings, db: Database) -> None:
    """Every pass the outbox needs, for every consumer of an application of ``settings``."""
    while await fanout.fan_out(db, outbox_consumers(settings)):
        pass


async def deliver(settings: Settings, db: Database, *, passes: int = 200) -> Dispatcher:
    """Fan the outbox out, then run dispatcher passes until no statement is pending."""
    await fan_out(settings, db)
    dispatcher = Dispatcher(settings, db)
    try:
        for _ in range(passes):
            await dispatcher.run_once()
            await dispatcher.settle()
            if await count(db, StatementStatus.PENDING) == 0:
                break
            await asyncio.sleep(0.01)
    finally:
        await dispatcher.close()
    return dispatcher


async def count(db: Database, status: StatementStatus, org_id: uuid.UUID | None = None) -> int:
    with tenancy.for_every_organization():  # read directly, as the dispatcher does
        async with db.session(write=False) as session:
            query = select(func.count()).where(XapiStatement.status == status)
            if org_id is not None:
                query = query.where(XapiStatement.organization_id == org_id)
            return int(await session.scalar(query) or 0)


async def rows(db: Database, org_id: uuid.UUID) -> list[XapiStatement]:
    with tenancy.for_every_organization():
        async with db.session(write=False) as session:
            found = await session.scalars(
                select(XapiStatement)
                .where(XapiStatement.organization_id == org_id)
                .order_by(XapiStatement.created_at, XapiStatement.id)
            )
            return list(found.all())


async def register(org: Org, ralph: RalphServer, user: RalphUser) -> dict[str, Any]:
    response = await org.client.put(
        "/organization/xapi",
        json={"Endpoint": ralph.endpoint, "Username": user.username, "Password": user.password},
        headers=org.admin,
    )
    assert response.status_code == 201, response.text
    return dict(response.json())

"""Helpers of the webhook tests: a dispatcher run to completion, in the test's loop."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from questline.storage import tenancy
from questline.storage.db import Database
from questline.webhooks.dispatcher import Dispatcher
from questline.webhooks.models import DeliveryStatus, WebhookDelivery
from tests.factories import Org
from tests.support.harness import AppHarness


async def drain(state: AppHarness, *, settings: Any = None, passes: int = 200) -> Dispatcher:
    """Run dispatcher passes until no delivery is due or pending (retries included)."""
    import asyncio

    dispatcher = Dispatcher(settings or state.settings, state.db, consumers=state.outbox_consumers)
    try:
        for _ in range(passes):
            await dispatcher.run_once()
            await dispatcher.settle()  # the pass starts attempts; wait for them here
            if await pending_count(state.db) == 0:
                break
            await asyncio.sleep(0.01)
    finally:
        await dispatcher.close()
    return dispatcher


async def pending_count(db: Database) -> int:
    # Every organization's deliveries, as the dispatcher sees them (row security).
    with tenancy.for_every_organization():
        async with db.session(write=False) as session:
            count = await session.scalar(
                select(func.count()).where(WebhookDelivery.status == DeliveryStatus.PENDING)
            )
    return int(count or 0)


async def subscribe(org: Org, url: str, events: list[str] | None = None) -> dict[str, Any]:
    response = await org.client.post(
        "/webhook",
        json={"url": url, "events": events or ["team.created"]},
        headers=org.admin,
    )
    assert response.status_code == 201, response.text
    return dict(response.json())

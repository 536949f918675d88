"""The outbox as the tests see it: its recorded events, and an organization that an
outbox consumer listens to."""

from __future__ import annotations

from sqlalchemy import select

from questline.events.models import Event
from questline.storage import tenancy
from tests.factories import Org
from tests.support.harness import AppHarness

UNSENT_HOOK = "https://93.184.215.14/hook"
"""A public address: accepted, and never called (no test here runs the dispatcher)."""


async def recorded(state: AppHarness) -> list[Event]:
    """Every organization's events and the platform's (row security: as the outbox's
    fan-out reads them)."""
    with tenancy.for_every_organization():
        async with state.db.session(write=False) as session:
            return list((await session.scalars(select(Event).order_by(Event.id))).all())


async def listened_to(org: Org) -> None:
    """Give ``org`` a webhook: from now on an outbox consumer listens to it, so the
    progress group commit records its events (``fanout.Listeners``)."""
    response = await org.client.post(
        "/webhook", json={"url": UNSENT_HOOK, "events": ["team.created"]}, headers=org.admin
    )
    assert response.status_code == 201, response.text

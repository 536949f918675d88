"""Who listens to an organization's events (``fanout.Consumer.listens``, asked by the
progress group commit through ``fanout.Listeners``): each consumer of the build says yes
exactly for the organizations it may take events of, and for no other organization."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import bindparam, text
from sqlalchemy.types import Uuid

from questline.app import outbox_consumers
from questline.events import fanout
from questline.lti.models import LtiPlatform
from questline.storage import tenancy
from questline.storage.db import utcnow
from questline.xapi.models import LrsConnection
from tests.events.factories import listened_to, recorded
from tests.factories import Org, World
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


class Asked:
    """Whether each consumer listens to ``orgs``, read from the database."""

    def __init__(self, state: AppHarness, orgs: list[Org]) -> None:
        self.state = state
        self.orgs = orgs
        settings = state.settings.model_copy(update={"public_url": "https://q.example.org"})
        self.consumers = {consumer.name: consumer for consumer in outbox_consumers(settings)}

    async def __call__(self, name: str) -> list[bool]:
        condition = fanout.Listeners.of([self.consumers[name]]).sql(":organization")
        query = text(f"SELECT {condition}").bindparams(bindparam("organization", type_=Uuid()))
        with tenancy.for_every_organization():
            async with self.state.db.session(write=False) as session:
                return [
                    bool(await session.scalar(query, {"organization": org.id})) for org in self.orgs
                ]


async def _add(state: AppHarness, org: Org, row: object) -> None:
    with tenancy.acting_for(org.id):
        async with state.db.session() as session:
            session.add(row)


async def test_each_consumer_listens_only_where_it_delivers(
    world: World, app_state: AppHarness
) -> None:
    org, other = world.org(), world.org()
    for each in (org, other):
        await each.create_team()  # the organizations' rows
    asked = Asked(app_state, [org, other])
    assert set(asked.consumers) == {"webhooks", "xapi", "lti-ags"}
    for name in asked.consumers:
        assert await asked(name) == [False, False], name

    await listened_to(org)
    assert await asked("webhooks") == [True, False]
    [hook] = (await org.client.get("/webhook", headers=org.admin)).json()
    disabled = await org.client.patch(
        f"/webhook/{hook['Id']}", json={"Enabled": False}, headers=org.admin
    )
    assert disabled.status_code == 200, disabled.text
    assert await asked("webhooks") == [False, False]  # a disabled webhook takes nothing

    now = utcnow()
    await _add(
        app_state,
        org,
        LrsConnection(
            organization_id=org.id,
            endpoint="http://127.0.0.1:9/xAPI",
            created_at=now,
            updated_at=now,
        ),
    )
    assert await asked("xapi") == [True, False]

    platform_id = uuid.uuid4()
    await _add(
        app_state,
        other,
        LtiPlatform(
            organization_id=other.id,
            id=platform_id,
            issuer="https://lms.example.org",
            client_id="questline",
            auth_login_url="https://lms.example.org/auth",
            auth_token_url="https://lms.example.org/token",
            key_set_url="https://lms.example.org/jwks",
        ),
    )
    assert await asked("lti-ags") == [False, False]  # no gradebook named yet
    with tenancy.acting_for(other.id):
        async with app_state.db.session() as session:
            platform = await session.get(LtiPlatform, (other.id, platform_id))
            assert platform is not None
            platform.lineitems_url = "https://lms.example.org/lineitems"
    assert await asked("lti-ags") == [False, True]
    assert await asked("webhooks") == [False, False]


def test_listeners_with_no_consumer_and_without_asking() -> None:
    assert fanout.Listeners.of([]).sql("o") == "1 = 0"
    assert fanout.EVERYONE.sql("o") == "1 = 1"


async def test_a_change_records_its_event_only_where_a_consumer_listens(
    world: World, app_state: AppHarness
) -> None:
    """Every way a change records its event (``events.record``, the progress ledger)
    asks the consumers: nothing for an organization none listens to, everything once
    one does; a global discipline's event is every organization's, always recorded."""
    quiet, listened = world.org(), world.org()
    await listened_to(listened)
    for org in (quiet, listened):
        team = await org.create_team()
        renamed = await org.client.patch(
            f"/team/{team['Id']}", json={"Name": "Comets"}, headers=org.admin
        )
        assert renamed.status_code == 200, renamed.text
    events = await recorded(app_state)
    assert [e.type for e in events if e.organization_id == listened.id] == [
        "team.created",
        "team.updated",
    ]
    assert [e for e in events if e.organization_id == quiet.id] == []

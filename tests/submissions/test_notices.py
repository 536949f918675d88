"""The e-mail a submitter gets when the work is decided (mail configured), and none
when the service sends no e-mail."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import update

from questline.config import Settings
from questline.members.models import Member
from questline.storage import tenancy
from tests.factories import World
from tests.mail.conftest import PUBLIC_URL, mail_settings
from tests.mail.smtp_server import Mailbox, smtp_server
from tests.mail.support import deliver, outbox
from tests.submissions.support import learner, review_discipline, submitted
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    with smtp_server() as found:
        yield found


@pytest.fixture
def settings(migrated_settings: Settings, mailbox: Mailbox) -> Settings:
    return mail_settings(migrated_settings, mailbox)


async def test_the_submitter_is_told_of_each_decision(
    world: World, app_state: AppHarness, mailbox: Mailbox
) -> None:
    org = world.org()
    named = await world.client.patch(
        "/organization", json={"Name": "Example Learning"}, headers=org.admin
    )
    assert named.status_code == 200
    _, tasks = await review_discipline(org)
    team = await org.create_team("Rockets")
    ada = await learner(world, org, team["Id"])
    bea = await learner(world, org, team["Id"], "Bea")
    first = await submitted(world.client, team["Id"], ada, tasks[0])
    second = await submitted(world.client, team["Id"], bea, tasks[1])
    rejected = await world.client.post(
        f"/submission/{first['Id']}/reject",
        json={"Comment": "The photo is blurry.\r\nBcc: x@evil.example"},
        headers=org.admin,
    )
    assert rejected.status_code == 200
    approved = await world.client.post(f"/submission/{second['Id']}/approve", headers=org.admin)
    assert approved.status_code == 200
    await deliver(app_state)
    mails = {m.recipients[0]: m for m in mailbox.messages()}
    assert set(mails) == {ada.email, bea.email}
    no = mails[ada.email]
    assert no.message["Subject"] == "Not yet: Build part 0 (Example Learning)"
    assert "Rockets" in no.text
    assert "The photo is blurry." in no.text
    assert f"{PUBLIC_URL}/ui/#/my-team" in no.text
    assert no.message["Bcc"] is None
    yes = mails[bea.email]
    assert yes.message["Subject"] == "Approved: Build part 1 (Example Learning)"
    assert "approved" in yes.text
    assert "code=" not in yes.text  # a notice carries no sign-in link
    assert {row["kind"] for row in await outbox(world.db)} == {"notice"}
    assert {row["status"] for row in await outbox(world.db)} == {"Sent"}


async def test_a_deactivated_submitter_gets_no_mail(
    world: World, app_state: AppHarness, mailbox: Mailbox
) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    made = await submitted(world.client, team["Id"], ada, tasks[0])
    with tenancy.acting_for(org.id):  # written directly: as the organization
        async with world.db.session() as session:
            await session.execute(
                update(Member).where(Member.id == uuid.UUID(ada.id)).values(active=False)
            )
    approved = await world.client.post(f"/submission/{made['Id']}/approve", headers=org.admin)
    assert approved.status_code == 200
    await deliver(app_state)
    assert mailbox.messages() == []
    assert [row["status"] for row in await outbox(world.db)] == ["Skipped"]

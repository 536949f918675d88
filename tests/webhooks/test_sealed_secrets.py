"""Webhook signing secrets at rest: sealed (``storage.sealing``), shown only when made
(creation, rotation), never in another answer or the audit log; a secret stored in clear
before sealing still signs and is sealed on the webhook's next write; a change of the
service's signing secret is survived with the previous one configured."""

from __future__ import annotations

import json
import secrets
import uuid
from typing import Any

import pytest
from sqlalchemy import select
from standardwebhooks.webhooks import Webhook as Verifier

from questline.audit.models import AuditEntry
from questline.auth.tokens import load_or_create_secret
from questline.storage import sealing, tenancy
from questline.webhooks import service
from questline.webhooks.models import Webhook
from tests.factories import Org, World
from tests.support.harness import AppHarness
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import drain, subscribe

pytestmark = pytest.mark.anyio


async def stored(state: AppHarness, hook: dict[str, Any]) -> Webhook:
    # The row by its id, whichever organization's (row security).
    with tenancy.for_every_organization():
        async with state.db.session(write=False) as session:
            row = await session.scalar(select(Webhook).where(Webhook.id == uuid.UUID(hook["Id"])))
    assert row is not None
    return row


async def store_secret(state: AppHarness, hook: dict[str, Any], value: str) -> None:
    with tenancy.for_every_organization():
        async with state.db.session(write=True) as session:
            row = await session.scalar(select(Webhook).where(Webhook.id == uuid.UUID(hook["Id"])))
            assert row is not None
            row.secret = value


async def deliveries(org: Org, hook: dict[str, Any]) -> list[dict[str, Any]]:
    response = await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    return list(response.json())


async def test_the_secret_is_stored_sealed_and_shown_only_when_made(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    secret = hook["Secret"]
    row = await stored(app_state, hook)
    assert row.secret.startswith(sealing.PREFIX)
    assert secret not in row.secret
    assert secret.removeprefix("whsec_") not in row.secret

    answers = [
        await org.client.get("/webhook", headers=org.admin),
        await org.client.get(f"/webhook/{hook['Id']}", headers=org.admin),
        await org.client.patch(
            f"/webhook/{hook['Id']}", json={"Description": "d"}, headers=org.admin
        ),
    ]
    rotated = await org.client.post(f"/webhook/{hook['Id']}/secret", headers=org.admin)
    assert rotated.status_code == 200
    new_secret = rotated.json()["Secret"]
    assert new_secret.startswith("whsec_")
    assert new_secret != secret
    answers.append(await org.client.get(f"/webhook/{hook['Id']}", headers=org.admin))
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert "Secret" not in answer.text.replace("PreviousSecretExpiresAt", "")
        assert secret not in answer.text
        assert new_secret not in answer.text

    row = await stored(app_state, hook)
    assert row.secret.startswith(sealing.PREFIX)
    assert new_secret not in row.secret
    assert row.previous_secret is not None
    assert row.previous_secret.startswith(sealing.PREFIX)
    assert secret not in row.previous_secret

    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=False) as session:
            entries = (
                await session.scalars(
                    select(AuditEntry).where(AuditEntry.organization_id == org.id)
                )
            ).all()
    logged = json.dumps([e.changes for e in entries], default=str)
    assert entries
    for value in (secret, new_secret, row.secret, row.previous_secret):
        assert value not in logged

    # Both still sign (the overlap after the rotation), opened from their sealed form.
    await org.create_team()
    await drain(app_state)
    [received] = hook_receiver.wait_for(1)
    Verifier(secret).verify(received.body, received.headers)
    Verifier(new_secret).verify(received.body, received.headers)


async def test_a_secret_stored_in_clear_still_signs_and_is_sealed_on_the_next_write(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    legacy = "whsec_" + "QUJD" * 11  # as rows written before sealing hold it
    await store_secret(app_state, hook, legacy)

    await org.create_team()
    await drain(app_state)
    [first] = hook_receiver.wait_for(1)
    Verifier(legacy).verify(first.body, first.headers)
    assert (await stored(app_state, hook)).secret == legacy  # reading rewrites nothing

    patched = await org.client.patch(
        f"/webhook/{hook['Id']}", json={"Description": "touched"}, headers=org.admin
    )
    assert patched.status_code == 200
    assert legacy not in patched.text
    row = await stored(app_state, hook)
    assert row.secret.startswith(sealing.PREFIX)
    assert legacy not in row.secret

    await org.create_team()
    await drain(app_state)
    second = hook_receiver.wait_for(2)[1]
    Verifier(legacy).verify(second.body, second.headers)  # the same secret, now sealed


async def test_a_sealed_secret_copied_to_another_organization_does_not_open(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    owner, thief = world.org(), world.org()
    owned = await subscribe(owner, hook_receiver.url)
    stolen = await subscribe(thief, hook_receiver.url)
    await store_secret(app_state, stolen, (await stored(app_state, owned)).secret)
    await thief.create_team()
    await drain(app_state)
    assert hook_receiver.requests == []
    [delivery] = await deliveries(thief, stolen)
    assert delivery["Status"] == "Failed"
    assert "cannot be read" in delivery["LastError"]


async def test_a_changed_signing_secret_is_survived_with_the_previous_one_configured(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    old_signing = load_or_create_secret(app_state.settings)
    new_signing = secrets.token_urlsafe(48)

    # Changed without the previous one: nothing opens, nothing is sent, the reason is
    # recorded (never the secret).
    await org.create_team()
    await drain(
        app_state, settings=app_state.settings.model_copy(update={"jwt_secret": new_signing})
    )
    assert hook_receiver.requests == []
    [failed] = await deliveries(org, hook)
    assert failed["Status"] == "Failed"
    assert "rotate it" in failed["LastError"]

    # With the previous one configured, the sealed secret opens and signs.
    rotated_settings = app_state.settings.model_copy(
        update={"jwt_secret": new_signing, "jwt_previous_secret": old_signing}
    )
    app_state.configure(jwt_secret=new_signing, jwt_previous_secret=old_signing)
    retried = await org.client.post(
        f"/webhook/{hook['Id']}/deliveries/{failed['Id']}/retry", headers=org.admin
    )
    assert retried.status_code == 202
    await drain(app_state, settings=rotated_settings)
    [received] = hook_receiver.wait_for(1)
    Verifier(hook["Secret"]).verify(received.body, received.headers)

    # The next write seals it under the new signing secret: readable without the old one.
    patched = await org.client.patch(
        f"/webhook/{hook['Id']}", json={"Description": "resealed"}, headers=org.admin
    )
    assert patched.status_code == 200
    row = await stored(app_state, hook)
    assert sealing.Sealer(new_signing).is_current(row.secret)
    assert service.signing_secrets(sealing.Sealer(new_signing), row, row.updated_at) == [
        hook["Secret"]
    ]


async def test_a_rotation_replaces_a_secret_that_no_longer_opens(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    new_signing = secrets.token_urlsafe(48)
    app_state.configure(jwt_secret=new_signing)  # the sealed secret no longer opens
    rotated = await org.client.post(f"/webhook/{hook['Id']}/secret", headers=org.admin)
    assert rotated.status_code == 200, rotated.text
    new_secret = rotated.json()["Secret"]
    await org.create_team()
    await drain(app_state, settings=app_state.settings)
    [received] = hook_receiver.wait_for(1)
    assert len(received.headers["webhook-signature"].split(" ")) == 1  # the new one alone
    Verifier(new_secret).verify(received.body, received.headers)

"""The tool's private keys at rest: sealed by the one sealer (``storage.sealing``) in the
service's scope, and still read after a rotation of the signing secret while the old
one is configured as ``QUESTLINE_JWT_PREVIOUS_SECRET``."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import select

from questline.lti import keys
from questline.lti.models import LtiToolKey
from questline.storage import sealing
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

OLD = "o" * 48
NEW = "n" * 48


async def _stored(app_state: AppHarness) -> list[LtiToolKey]:
    async with app_state.db.session(write=False) as session:
        return list(
            (await session.scalars(select(LtiToolKey).order_by(LtiToolKey.generation))).all()
        )


async def test_the_private_key_is_sealed_by_the_one_sealer_in_the_services_scope(
    app_state: AppHarness,
) -> None:
    async with app_state.db.session(write=True) as session:
        signing = await keys.signing_key(session, settings=app_state.settings, signing_secret=OLD)
    [row] = await _stored(app_state)
    assert row.kid == signing.kid
    assert row.private_sealed.startswith(f"{sealing.PREFIX}{sealing.key_id(OLD)}:")
    assert "PRIVATE KEY" not in row.private_sealed
    sealer = sealing.Sealer(OLD)
    pem = sealer.unseal(row.private_sealed, organization=sealing.SERVICE, purpose="lti tool key 1")
    assert pem.startswith("-----BEGIN PRIVATE KEY-----")
    # Neither an organization's scope nor another generation opens it.
    with pytest.raises(sealing.Unreadable):
        sealer.unseal(row.private_sealed, organization=uuid.UUID(int=0), purpose="lti tool key 1")
    with pytest.raises(sealing.Unreadable):
        sealer.unseal(row.private_sealed, organization=sealing.SERVICE, purpose="lti tool key 2")


async def test_a_key_sealed_before_a_rotation_still_signs_after_it(
    client: httpx.AsyncClient, app_state: AppHarness
) -> None:
    settings = app_state.settings
    async with app_state.db.session(write=True) as session:
        before = await keys.signing_key(session, settings=settings, signing_secret=OLD)
    # The signing secret rotated, the old one kept as the previous: the same key signs,
    # and is sealed anew under the new secret on the way.
    rotated = settings.model_copy(update={"jwt_previous_secret": OLD})
    async with app_state.db.session(write=True) as session:
        after = await keys.signing_key(session, settings=rotated, signing_secret=NEW)
    assert after.kid == before.kid
    assert after.key.as_dict(private=False)["n"] == before.key.as_dict(private=False)["n"]
    [row] = await _stored(app_state)
    assert sealing.Sealer(NEW).is_current(row.private_sealed)
    # Once re-sealed, the previous secret can go: the key still signs without it.
    async with app_state.db.session(write=True) as session:
        later = await keys.signing_key(session, settings=settings, signing_secret=NEW)
    assert later.kid == before.kid
    published = (await client.get("/.well-known/jwks.json")).json()
    assert [k["kid"] for k in published["keys"]] == [before.kid]


async def test_a_secret_rotated_without_the_previous_one_makes_a_new_generation(
    app_state: AppHarness,
) -> None:
    async with app_state.db.session(write=True) as session:
        before = await keys.signing_key(session, settings=app_state.settings, signing_secret=OLD)
    async with app_state.db.session(write=True) as session:
        after = await keys.signing_key(session, settings=app_state.settings, signing_secret=NEW)
    assert after.kid != before.kid
    rows = await _stored(app_state)
    assert [r.generation for r in rows] == [1, 2]
    # The old generation is still published (what it signed still verifies) but is not
    # rewritten: nothing here can open it.
    assert not sealing.Sealer(NEW).is_current(rows[0].private_sealed)

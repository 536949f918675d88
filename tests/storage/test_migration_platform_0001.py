"""Migration ``platform_0001``: the LTI tool's private keys, sealed in their own format
before, are re-sealed by the one sealer, under the current signing secret even when
the old format was sealed under the previous one; the service then signs with the
same key. The downgrade writes the old format back."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import os
from pathlib import Path

import pytest
from alembic import command
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from joserfc.jwk import RSAKey
from sqlalchemy import text

from questline.config import Settings
from questline.lti import keys
from questline.storage import sealing
from questline.storage.db import Database
from questline.storage.migrate import alembic_config, upgrade
from tests.conftest import TEST_SETTINGS
from tests.support.postgres import PostgresServer, unique_database_name

OLD = "o" * 48
NEW = "n" * 48


def _old_cipher(signing_secret: str) -> AESGCM:
    """The format the tool's keys had before: their own HKDF key, the generation as
    associated data."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"questline lti tool key v1")
    return AESGCM(key.derive(signing_secret.encode()))


def _old_seal(pem: bytes, generation: int, signing_secret: str) -> str:
    nonce = os.urandom(12)
    body = _old_cipher(signing_secret).encrypt(nonce, pem, str(generation).encode())
    return base64.urlsafe_b64encode(nonce + body).decode("ascii")


def _old_open(value: str, generation: int, signing_secret: str) -> bytes:
    raw = base64.urlsafe_b64decode(value)
    return _old_cipher(signing_secret).decrypt(raw[:12], raw[12:], str(generation).encode())


@pytest.fixture
def fresh(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    """An empty database of the backend, not migrated yet."""
    options = {**TEST_SETTINGS, "data_dir": tmp_path}
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        options["database_url"] = server.create_database(unique_database_name())
        options["database_row_security"] = False  # the database's owner: one role
    return Settings(**options)


async def _execute(settings: Settings, sql: str, **params: object) -> list[tuple[object, ...]]:
    db = Database(settings)
    try:
        async with db.session(write=True) as session:
            result = await session.execute(text(sql), params)
            return [tuple(r) for r in result] if result.returns_rows else []
    finally:
        await db.dispose()


async def _signing_kid(settings: Settings, signing_secret: str) -> tuple[str, str]:
    db = Database(settings)
    try:
        async with db.session(write=True) as session:
            signing = await keys.signing_key(
                session, settings=settings, signing_secret=signing_secret
            )
            return signing.kid, str(signing.key.as_dict(private=False)["n"])
    finally:
        await db.dispose()


def test_old_sealed_keys_are_resealed_and_still_sign(fresh: Settings) -> None:
    upgrade(fresh, "scim_0001")
    key = RSAKey.generate_key(2048, parameters={"kid": "old-kid", "alg": "RS256"}, private=True)
    asyncio.run(
        _execute(
            fresh,
            "INSERT INTO lti_tool_keys (generation, kid, public_jwk, private_sealed, created_at)"
            " VALUES (1, 'old-kid', :jwk, :sealed, :at)",
            jwk='{"kty": "RSA"}',
            sealed=_old_seal(key.as_pem(private=True), 1, OLD),
            at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        )
    )
    # The signing secret rotates along the upgrade: the old one is the previous.
    rotated = fresh.model_copy(update={"jwt_secret": NEW, "jwt_previous_secret": OLD})
    upgrade(rotated, "platform_0001")
    [(stored,)] = asyncio.run(_execute(rotated, "SELECT private_sealed FROM lti_tool_keys"))
    assert isinstance(stored, str)
    assert sealing.Sealer(NEW).is_current(stored)
    # The service signs with the same key, without the previous secret any more.
    settled = rotated.model_copy(update={"jwt_previous_secret": None})
    kid, modulus = asyncio.run(_signing_kid(settled, NEW))
    assert (kid, modulus) == ("old-kid", key.as_dict(private=False)["n"])

    command.downgrade(alembic_config(settled), "scim_0001")
    [(back,)] = asyncio.run(_execute(settled, "SELECT private_sealed FROM lti_tool_keys"))
    assert isinstance(back, str)
    assert not sealing.is_sealed(back)
    assert _old_open(back, 1, NEW) == key.as_pem(private=True)


def test_a_key_that_opens_under_no_secret_is_left_for_a_new_generation(fresh: Settings) -> None:
    upgrade(fresh, "scim_0001")
    key = RSAKey.generate_key(2048, parameters={"kid": "lost-kid"}, private=True)
    lost = _old_seal(key.as_pem(private=True), 1, "x" * 48)
    asyncio.run(
        _execute(
            fresh,
            "INSERT INTO lti_tool_keys (generation, kid, public_jwk, private_sealed, created_at)"
            " VALUES (1, 'lost-kid', :jwk, :sealed, :at)",
            jwk='{"kty": "RSA"}',
            sealed=lost,
            at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        )
    )
    settings = fresh.model_copy(update={"jwt_secret": NEW})
    upgrade(settings, "platform_0001")
    [(stored,)] = asyncio.run(_execute(settings, "SELECT private_sealed FROM lti_tool_keys"))
    assert stored == lost
    kid, _ = asyncio.run(_signing_kid(settings, NEW))
    assert kid != "lost-kid"

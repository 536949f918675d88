"""Questline's own signing keys as an LTI tool: RSA key pairs in ``lti_tool_keys``.

* Made on first use (no operator step); the newest **generation** signs (client
  assertions for the platform's token endpoint, deep-linking responses).
* Rotation: once the newest is ``QUESTLINE_LTI_KEY_ROTATION_DAYS`` (90) old, the next
  signature makes a new generation. ``GET /.well-known/jwks.json`` lists the two newest:
  a platform that cached the set before the rotation finds the new ``kid`` on its next
  fetch, and tokens signed just before it still verify with the old one. Older
  generations are deleted. Processes that rotate at once agree: the generation number
  is the primary key, so only one insert of the next generation wins.
* In the table, not the data directory, because every process and host that shares
  the database must sign with keys the one published set lists. The private key is
  sealed (AES-256-GCM, the generation as associated data) under a key derived from the
  service's signing secret; when that secret changes the stored keys cannot be opened,
  and the next signature makes a new generation (platforms fetch it by its new kid).
"""

from __future__ import annotations

import base64
import datetime as dt
import os
import secrets
from dataclasses import dataclass
from typing import Any, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from joserfc.jwk import RSAKey
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.config import Settings
from questline.lti.models import LtiToolKey
from questline.storage.db import insert_ignoring_conflicts, utcnow

ALGORITHM = "RS256"
KEY_BITS = 2048
PUBLISHED = 2
"""Generations listed by the JWKS: the signing one and the one before."""
_CONTEXT = b"questline lti tool key v1"


@dataclass(frozen=True, slots=True)
class SigningKey:
    kid: str
    key: RSAKey


def _cipher(signing_secret: str) -> AESGCM:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_CONTEXT).derive(
        signing_secret.encode()
    )
    return AESGCM(derived)


def _seal(pem: bytes, *, generation: int, signing_secret: str) -> str:
    nonce = os.urandom(12)
    sealed = _cipher(signing_secret).encrypt(nonce, pem, str(generation).encode())
    return base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def _unseal(value: str, *, generation: int, signing_secret: str) -> bytes | None:
    try:
        raw = base64.urlsafe_b64decode(value)
        return _cipher(signing_secret).decrypt(raw[:12], raw[12:], str(generation).encode())
    except (InvalidTag, ValueError):
        return None


async def _newest(session: AsyncSession, count: int) -> list[LtiToolKey]:
    return list(
        (
            await session.scalars(
                select(LtiToolKey)
                .order_by(LtiToolKey.generation.desc())
                .limit(count)
                .execution_options(populate_existing=True)
            )
        ).all()
    )


async def _make_generation(session: AsyncSession, *, generation: int, signing_secret: str) -> None:
    kid = secrets.token_urlsafe(12)
    params = {"kid": kid, "use": "sig", "alg": ALGORITHM}
    key = RSAKey.generate_key(KEY_BITS, parameters=cast(Any, params), private=True)
    await session.execute(
        insert_ignoring_conflicts(session, LtiToolKey.__table__, ["generation"]).values(
            generation=generation,
            kid=kid,
            public_jwk=key.as_dict(private=False),
            private_sealed=_seal(
                key.as_pem(private=True), generation=generation, signing_secret=signing_secret
            ),
            created_at=utcnow(),
        )
    )
    # Keep the published ones; older generations sign nothing and verify nothing.
    await session.execute(delete(LtiToolKey).where(LtiToolKey.generation <= generation - PUBLISHED))


async def signing_key(
    session: AsyncSession, *, settings: Settings, signing_secret: str
) -> SigningKey:
    """The key that signs now: the newest generation, made (or rotated) when due."""
    for _ in range(3):
        newest = await _newest(session, 1)
        row = newest[0] if newest else None
        age_limit = dt.timedelta(days=settings.lti_key_rotation_days)
        if row is not None and utcnow() - row.created_at < age_limit:
            pem = _unseal(
                row.private_sealed, generation=row.generation, signing_secret=signing_secret
            )
            if pem is not None:
                key = RSAKey.import_key(pem, parameters={"kid": row.kid, "alg": ALGORITHM})
                return SigningKey(kid=row.kid, key=key)
        await _make_generation(
            session,
            generation=(row.generation + 1) if row is not None else 1,
            signing_secret=signing_secret,
        )
        await session.flush()  # then read back whichever insert of that generation won
    raise RuntimeError("no usable LTI signing key could be made")  # pragma: no cover


async def published_key_set(session: AsyncSession) -> dict[str, Any]:
    """``{"keys": [...]}``: the public halves of the two newest generations."""
    return {"keys": [dict(row.public_jwk) for row in await _newest(session, PUBLISHED)]}

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
  sealed by the service's one sealer (``storage.sealing``: AES-256-GCM, in the
  service's own scope, the generation bound in the purpose) under the signing secret.
  After a rotation of that secret, a key sealed under the one now configured as
  ``QUESTLINE_JWT_PREVIOUS_SECRET`` still opens and is sealed anew under the current
  one when it next signs; a key that opens under neither makes the next signature
  make a new generation (platforms fetch it by its new kid).
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any, cast

from joserfc.jwk import RSAKey
from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from questline.config import Settings
from questline.lti.models import LtiToolKey
from questline.storage import sealing
from questline.storage.db import insert_ignoring_conflicts, utcnow

ALGORITHM = "RS256"
KEY_BITS = 2048
PUBLISHED = 2
"""Generations listed by the JWKS: the signing one and the one before."""


def _purpose(generation: int) -> str:
    # The generation is bound: a sealed key copied into another generation's row (whose
    # kid the platforms know as another key's) does not open there.
    return f"lti tool key {generation}"


@dataclass(frozen=True, slots=True)
class SigningKey:
    kid: str
    key: RSAKey


def _sealer(settings: Settings, signing_secret: str) -> sealing.Sealer:
    return sealing.Sealer(signing_secret, settings.jwt_previous_secret)


def _seal(sealer: sealing.Sealer, pem: bytes, *, generation: int) -> str:
    return sealer.seal(
        pem.decode("ascii"), organization=sealing.SERVICE, purpose=_purpose(generation)
    )


def _unseal(sealer: sealing.Sealer, value: str, *, generation: int) -> bytes | None:
    try:
        opened = sealer.unseal(value, organization=sealing.SERVICE, purpose=_purpose(generation))
    except sealing.Unreadable:
        return None
    return opened.encode("ascii")


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


async def _make_generation(
    session: AsyncSession, *, generation: int, sealer: sealing.Sealer
) -> None:
    kid = secrets.token_urlsafe(12)
    params = {"kid": kid, "use": "sig", "alg": ALGORITHM}
    key = RSAKey.generate_key(KEY_BITS, parameters=cast(Any, params), private=True)
    await session.execute(
        insert_ignoring_conflicts(session, LtiToolKey.__table__, ["generation"]).values(
            generation=generation,
            kid=kid,
            public_jwk=key.as_dict(private=False),
            private_sealed=_seal(sealer, key.as_pem(private=True), generation=generation),
            created_at=utcnow(),
        )
    )
    # Keep the published ones; older generations sign nothing and verify nothing.
    await session.execute(delete(LtiToolKey).where(LtiToolKey.generation <= generation - PUBLISHED))


async def signing_key(
    session: AsyncSession, *, settings: Settings, signing_secret: str
) -> SigningKey:
    """The key that signs now: the newest generation, made (or rotated) when due."""
    sealer = _sealer(settings, signing_secret)
    for _ in range(3):
        newest = await _newest(session, 1)
        row = newest[0] if newest else None
        age_limit = dt.timedelta(days=settings.lti_key_rotation_days)
        if row is not None and utcnow() - row.created_at < age_limit:
            pem = _unseal(sealer, row.private_sealed, generation=row.generation)
            if pem is not None:
                if not sealer.is_current(row.private_sealed):
                    await _reseal(session, sealer, row, pem)
                key = RSAKey.import_key(pem, parameters={"kid": row.kid, "alg": ALGORITHM})
                return SigningKey(kid=row.kid, key=key)
        await _make_generation(
            session,
            generation=(row.generation + 1) if row is not None else 1,
            sealer=sealer,
        )
        await session.flush()  # then read back whichever insert of that generation won
    raise RuntimeError("no usable LTI signing key could be made")  # pragma: no cover


async def _reseal(
    session: AsyncSession, sealer: sealing.Sealer, row: LtiToolKey, pem: bytes
) -> None:
    """Seal under the current signing secret what the previous one sealed, so that the
    previous secret can be dropped once every row was rewritten. Only the value read is
    replaced: a process that re-sealed it first wins, and both values open."""
    await session.execute(
        update(LtiToolKey)
        .where(
            LtiToolKey.generation == row.generation,
            LtiToolKey.private_sealed == row.private_sealed,
        )
        .values(private_sealed=_seal(sealer, pem, generation=row.generation))
    )


async def published_key_set(session: AsyncSession) -> dict[str, Any]:
    """``{"keys": [...]}``: the public halves of the two newest generations."""
    return {"keys": [dict(row.public_jwk) for row in await _newest(session, PUBLISHED)]}

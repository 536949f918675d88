"""The LTI tool's private keys (``lti_tool_keys.private_sealed``) sealed by the one
sealer (``storage.sealing``: ``qs1:<key id>:…``, the service's scope) instead of their
own format (base64 of nonce and AES-256-GCM ciphertext under an HKDF key of their own).

Each row is opened with the signing secret, or with ``QUESTLINE_JWT_PREVIOUS_SECRET``,
and sealed anew under the current one. A row that opens under neither was already
unreadable: it is left as it is, and the service makes a new key generation on its next
signature, as it did before. The old format is written out here, frozen: the service
itself no longer reads it.

Revision ID: platform_0001
Revises: scim_0001
"""

import base64
import os
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from questline.config import Settings
from questline.storage import sealing

revision: str = "platform_0001"
down_revision: str | None = "scim_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_CONTEXT = b"questline lti tool key v1"
_KEYS = sa.table(
    "lti_tool_keys",
    sa.column("generation", sa.Integer()),
    sa.column("private_sealed", sa.String()),
)


def _purpose(generation: int) -> str:
    # As ``lti.keys`` seals them (a migration keeps its own copy: it must not change
    # when the service's code does).
    return f"lti tool key {generation}"


def _old_cipher(signing_secret: str) -> AESGCM:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_OLD_CONTEXT)
    return AESGCM(key.derive(signing_secret.encode()))


def _old_open(value: str, generation: int, signing_secret: str) -> str | None:
    try:
        raw = base64.urlsafe_b64decode(value)
        nonce, body = raw[:12], raw[12:]
        return _old_cipher(signing_secret).decrypt(nonce, body, str(generation).encode()).decode()
    except (InvalidTag, ValueError):
        return None


def _old_seal(pem: str, generation: int, signing_secret: str) -> str:
    nonce = os.urandom(12)
    sealed = _old_cipher(signing_secret).encrypt(nonce, pem.encode(), str(generation).encode())
    return base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def _settings() -> Settings:
    given = context.config.attributes.get("settings")
    return given if isinstance(given, Settings) else Settings()


def _rows() -> list[tuple[int, str]]:
    found = op.get_bind().execute(sa.select(_KEYS.c.generation, _KEYS.c.private_sealed))
    return [(int(generation), str(stored)) for generation, stored in found]


def _write(generation: int, stored: str) -> None:
    op.get_bind().execute(
        sa.update(_KEYS).where(_KEYS.c.generation == generation).values(private_sealed=stored)
    )


def upgrade() -> None:
    rows = _rows()
    settings = _settings()
    current = settings.existing_signing_secret()
    if not rows or current is None:
        return
    sealer = sealing.Sealer(current, settings.jwt_previous_secret)
    candidates = [
        current,
        *([settings.jwt_previous_secret] if settings.jwt_previous_secret else []),
    ]
    for generation, stored in rows:
        if sealing.is_sealed(stored):
            continue
        pem = next(
            (p for s in candidates if (p := _old_open(stored, generation, s)) is not None), None
        )
        if pem is not None:
            _write(
                generation,
                sealer.seal(pem, organization=sealing.SERVICE, purpose=_purpose(generation)),
            )


def downgrade() -> None:
    rows = _rows()
    settings = _settings()
    current = settings.existing_signing_secret()
    if not rows or current is None:
        return
    sealer = sealing.Sealer(current, settings.jwt_previous_secret)
    for generation, stored in rows:
        if not sealing.is_sealed(stored):
            continue
        try:
            pem = sealer.unseal(stored, organization=sealing.SERVICE, purpose=_purpose(generation))
        except sealing.Unreadable:
            continue
        _write(generation, _old_seal(pem, generation, current))

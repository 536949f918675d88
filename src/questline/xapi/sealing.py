"""The LRS's password or token at rest: sealed by ``storage.sealing`` (AES-256-GCM under
a key per organization derived from the service's signing secret, the key named in the
sealed text; docs/webhooks.md, "Secrets at rest").

Values sealed before that module existed (``v1:`` + base64(nonce, ciphertext), one key
for every organization, the organization as associated data) are still opened here;
the next ``PUT /organization/xapi`` seals them the new way. Rotating the signing secret
without keeping the old one as ``QUESTLINE_JWT_PREVIOUS_SECRET`` makes the stored
credentials unreadable: the sends then fail with a message asking the admin to PUT them
again (docs/platforms.md).
"""

from __future__ import annotations

import base64
import uuid

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from questline.auth.tokens import load_or_create_secret
from questline.config import Settings
from questline.storage import sealing

SEALED_AS = "xapi lrs credentials"
LEGACY_PREFIX = "v1:"
_LEGACY_CONTEXT = b"questline xapi lrs credentials v1"


class Unreadable(ValueError):
    """Sealed with another key (the signing secret changed), or not sealed at all."""


def _sealer(settings: Settings) -> sealing.Sealer:
    return sealing.Sealer(load_or_create_secret(settings), settings.jwt_previous_secret)


def seal(settings: Settings, plaintext: str, *, organization: str) -> str:
    return _sealer(settings).seal(
        plaintext, organization=uuid.UUID(organization), purpose=SEALED_AS
    )


def unseal(settings: Settings, value: str, *, organization: str) -> str:
    try:
        if sealing.is_sealed(value):
            return _sealer(settings).unseal(
                value, organization=uuid.UUID(organization), purpose=SEALED_AS
            )
        if value.startswith(LEGACY_PREFIX):
            return _unseal_legacy(settings, value, organization=organization)
    except (sealing.Unreadable, InvalidTag, ValueError) as exc:
        raise Unreadable(
            "The stored LRS credentials cannot be read (the service's signing secret "
            "changed?): PUT /organization/xapi with them again."
        ) from exc
    raise Unreadable("The stored LRS credentials are not sealed.")


def _unseal_legacy(settings: Settings, value: str, *, organization: str) -> str:
    secret = load_or_create_secret(settings).encode()
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_LEGACY_CONTEXT).derive(secret)
    raw = base64.urlsafe_b64decode(value[len(LEGACY_PREFIX) :])
    return AESGCM(key).decrypt(raw[:12], raw[12:], organization.encode()).decode()

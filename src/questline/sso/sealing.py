"""The client secret at rest: sealed by ``storage.sealing`` (AES-256-GCM under a key per
organization derived from the service's signing secret, the key named in the sealed
text), so that no second secret has to be configured and a copy of the database alone
reveals nothing.

Secrets sealed before that module existed are Fernet tokens (AES-128-CBC +
HMAC-SHA256 under one key derived with HKDF from the signing secret): they still open
here, and saving the configuration with its secret seals it the new way.

Changing the signing secret (``QUESTLINE_JWT_SECRET`` or the data directory's file)
without keeping the old one as ``QUESTLINE_JWT_PREVIOUS_SECRET`` makes the stored
secrets unreadable: single sign-on then refuses logins with a message that tells an
admin to save the configuration again (docs/identity.md).
"""

from __future__ import annotations

import base64
import uuid

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from questline.storage import sealing

SEALED_AS = "sso client secret"
_LEGACY_INFO = b"questline sso client secret v1"


class UnreadableSecret(ValueError):
    """The sealed secret was sealed under another key (the signing secret changed)."""


def seal(secret: str, *, signing_secret: str, organization: uuid.UUID) -> str:
    return sealing.Sealer(signing_secret).seal(secret, organization=organization, purpose=SEALED_AS)


def unseal(
    sealed: str,
    *,
    signing_secret: str,
    organization: uuid.UUID,
    previous_signing_secret: str | None = None,
) -> str:
    if sealing.is_sealed(sealed):
        try:
            return sealing.Sealer(signing_secret, previous_signing_secret).unseal(
                sealed, organization=organization, purpose=SEALED_AS
            )
        except sealing.Unreadable as exc:
            raise UnreadableSecret("the client secret was sealed under another key") from exc
    try:
        return _legacy_fernet(signing_secret).decrypt(sealed.encode("ascii")).decode()
    except (InvalidToken, ValueError) as exc:
        raise UnreadableSecret("the client secret was sealed under another key") from exc


def _legacy_fernet(signing_secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_LEGACY_INFO).derive(
        signing_secret.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))

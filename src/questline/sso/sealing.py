"""The client secret at rest: Fernet (AES-128-CBC + HMAC-SHA256) under a key derived
from the service's signing secret with HKDF, so that no second secret has to be
configured and a copy of the database alone reveals nothing.

Changing the signing secret (``QUESTLINE_JWT_SECRET`` or the data directory's file)
makes the stored secrets unreadable: single sign-on then refuses logins with a message
that tells an admin to save the configuration again (docs/identity.md).
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_INFO = b"questline sso client secret v1"


class UnreadableSecret(ValueError):
    """The sealed secret was sealed under another key (the signing secret changed)."""


def _fernet(signing_secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(
        signing_secret.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


def seal(secret: str, *, signing_secret: str) -> str:
    return _fernet(signing_secret).encrypt(secret.encode()).decode("ascii")


def unseal(sealed: str, *, signing_secret: str) -> str:
    try:
        return _fernet(signing_secret).decrypt(sealed.encode("ascii")).decode()
    except (InvalidToken, ValueError) as exc:
        raise UnreadableSecret("the client secret was sealed under another key") from exc

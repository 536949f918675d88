"""The LRS's password or token at rest: sealed with AES-256-GCM.

The key is derived (HKDF-SHA256) from the service's signing secret
(``QUESTLINE_JWT_SECRET``, else the one kept in the data directory): a copy of the
database or its backups alone does not reveal the credentials. Rotating that secret
makes the stored credentials unreadable: the sends then fail with a message asking
the admin to PUT them again (docs/platforms.md).
"""

from __future__ import annotations

import base64
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from questline.auth.tokens import load_or_create_secret
from questline.config import Settings

PREFIX = "v1:"
CONTEXT = b"questline xapi lrs credentials v1"


class Unreadable(ValueError):
    """Sealed with another key (the signing secret changed), or not sealed at all."""


def _cipher(settings: Settings) -> AESGCM:
    secret = load_or_create_secret(settings).encode()
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=CONTEXT).derive(secret)
    return AESGCM(key)


def seal(settings: Settings, plaintext: str, *, organization: str) -> str:
    """``v1:`` + base64(nonce, ciphertext); the organization is bound as associated
    data (a sealed value copied to another organization's row does not open)."""
    nonce = os.urandom(12)
    sealed = _cipher(settings).encrypt(nonce, plaintext.encode(), organization.encode())
    return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


def unseal(settings: Settings, value: str, *, organization: str) -> str:
    if not value.startswith(PREFIX):
        raise Unreadable("The stored LRS credentials are not sealed.")
    try:
        raw = base64.urlsafe_b64decode(value[len(PREFIX) :])
        opened = _cipher(settings).decrypt(raw[:12], raw[12:], organization.encode())
    except (InvalidTag, ValueError) as exc:
        raise Unreadable(
            "The stored LRS credentials cannot be read (the service's signing secret "
            "changed?): PUT /organization/xapi with them again."
        ) from exc
    return opened.decode()

"""Standard Webhooks signatures (https://www.standardwebhooks.com).

A secret is ``whsec_`` + base64 of 32 random bytes. The signature of an attempt is
``v1,`` + base64(HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")); while a
rotated-out secret is still valid, ``webhook-signature`` carries both, space-separated.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Sequence

PREFIX = "whsec_"


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(PREFIX))


def sign(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(secrets_: Sequence[str], *, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three ``webhook-*`` headers, signed with every secret given (newest first)."""
    signatures = " ".join(sign(s, msg_id=msg_id, timestamp=timestamp, body=body) for s in secrets_)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signatures,
    }

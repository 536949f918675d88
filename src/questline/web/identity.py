"""Who is calling: the vocabulary the HTTP boundary and every domain share.

How a caller is proven (JWTs, dashboard sessions) is the ``auth`` domain's job; what a
caller *is* — a subject with a role, inside an organization or not — is needed by the
boundary itself (access rules, idempotency keys, the fast lane), so it lives here, with
no import heavier than the standard library.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class Role(enum.StrEnum):
    MEMBER = "member"
    ADMIN = "admin"
    OPERATOR = "operator"
    SCIM = "scim"
    """A directory's provisioning client: it may call ``/scim/v2`` and nothing else."""


class Via(enum.StrEnum):
    """How a caller proved who it is (the audit log's "how")."""

    TOKEN = "token"
    """A bearer token (the API)."""
    SESSION = "session"
    """The dashboard's session cookie."""
    PROVIDER = "provider"
    """The organization's OpenID provider acting itself (a member created by an SSO
    sign-in)."""
    SCIM = "scim"
    """The organization's directory through ``/scim/v2``, with its ``scim`` token."""
    SYSTEM = "system"
    """No request: the command line, the demo loader, background work."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the verified claims of the bearer token (or of the session)."""

    subject: str
    role: Role
    org_id: uuid.UUID | None
    email: str | None = None
    """The token's ``email`` claim, or the dashboard session's e-mail (who the caller is
    among the organization's members)."""
    via: Via = Via.TOKEN

    @property
    def is_operator(self) -> bool:
        return self.role is Role.OPERATOR


ACTING_CALLER = "questline_acting_caller"
"""``session.info`` key: the ``Caller`` of the request whose write transaction the
session is (set by the transactional route; read by the audit log for its actor)."""


def bearer_token(authorization: bytes | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header's raw value, else
    ``None`` (no header, another scheme, nothing after it)."""
    if authorization is None:
        return None
    scheme, _, credentials = authorization.decode("latin-1").partition(" ")
    token = credentials.strip()
    return token if scheme.lower() == "bearer" and token else None


def scope_bearer(scope: Mapping[str, Any]) -> str | None:
    """The bearer token of an ASGI request's ``Authorization`` header: the one reading of
    it, for the access rules, the rate limiter and the fast lane alike."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            return bearer_token(value)
    return None

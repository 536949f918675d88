"""Minting and verifying JWTs (DESIGN §3).

Embedded default: HS256 with a secret generated into the data directory on first start.
With an identity provider: RS256/ES256 verified with a PEM public key or a JWKS URL.
"""

from __future__ import annotations

import datetime as dt
import enum
import os
import secrets
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from questline.config import SECRET_FILE_NAME, Settings
from questline.web.errors import Unauthorized


class Role(enum.StrEnum):
    MEMBER = "member"
    ADMIN = "admin"
    OPERATOR = "operator"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: the verified claims of the bearer token."""

    subject: str
    role: Role
    org_id: uuid.UUID | None

    @property
    def is_operator(self) -> bool:
        return self.role is Role.OPERATOR


def load_or_create_secret(settings: Settings) -> str:
    """The HS256 secret: configured, or kept in the data directory (created once)."""
    if settings.jwt_secret:
        return settings.jwt_secret
    path: Path = settings.ensure_data_dir() / SECRET_FILE_NAME
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    secret = secrets.token_urlsafe(48)
    # Written whole to a private file, then published with link(), which fails when the
    # name exists: two processes starting at once (workers, `serve` beside `token
    # create`) agree on the one that won, and no reader ever sees a half-written file.
    fd, scratch = tempfile.mkstemp(prefix=f".{SECRET_FILE_NAME}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(secret)
        os.link(scratch, path)
    except FileExistsError:
        return path.read_text().strip()
    finally:
        os.unlink(scratch)
    return secret


VERIFIED_TOKENS = 10_000
"""Verified tokens remembered per process (about 4 MB at most)."""
JWKS_TRUST_SECONDS = 60.0


class TokenService:
    """Verifies bearer tokens and mints the embedded default's tokens."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.algorithms = [a for a in settings.jwt_algorithms if a.lower() != "none"]
        self._jwks = jwt.PyJWKClient(settings.jwt_jwks_url) if settings.jwt_jwks_url else None
        self._public_key = settings.jwt_public_key
        self._secret = (
            load_or_create_secret(settings)
            if any(a.startswith("HS") for a in self.algorithms)
            else None
        )
        self._verified: dict[str, tuple[Caller, float]] = {}

    def keys_rotated(self) -> None:
        """Forget every verified token: call when the verification keys change."""
        self._verified.clear()

    def mint(
        self,
        *,
        role: Role,
        org_id: uuid.UUID | None,
        subject: str = "cli",
        lifetime: dt.timedelta | None = None,
    ) -> str:
        if self._secret is None:
            raise RuntimeError("tokens are issued by the identity provider, not by Questline")
        if role is Role.OPERATOR and org_id is not None:
            raise ValueError("an operator token carries no organization")
        if role is not Role.OPERATOR and org_id is None:
            raise ValueError("member and admin tokens need an organization")
        now = dt.datetime.now(dt.UTC)
        claims: dict[str, Any] = {
            "sub": subject,
            self.settings.jwt_role_claim: role.value,
            "iat": now,
            "nbf": now,
            "exp": now + (lifetime or dt.timedelta(days=self.settings.token_lifetime_days)),
            "jti": uuid.uuid4().hex,
        }
        if org_id is not None:
            claims[self.settings.jwt_org_claim] = str(org_id)
        if self.settings.jwt_issuer:
            claims["iss"] = self.settings.jwt_issuer
        if self.settings.jwt_audience:
            claims["aud"] = self.settings.jwt_audience
        return jwt.encode(claims, self._secret, algorithm="HS256")

    def verify(self, token: str) -> Caller:
        """The caller of a valid token; 401 otherwise.

        Verified tokens are remembered (at most ``VERIFIED_TOKENS``, oldest dropped first)
        until their ``exp`` (plus the leeway the check allows), and with keys fetched
        from a JWKS URL at most ``JWKS_TRUST_SECONDS``, so that a key withdrawn from the
        set stops working within that time; ``keys_rotated`` forgets them all.
        A repeated token then costs a dictionary look-up instead of a signature check.
        """
        remembered = self._verified.get(token)
        if remembered is not None:
            caller, until = remembered
            if time.time() < until:
                return caller
            del self._verified[token]
        caller, expires = self._verify(token)
        until = expires + self.settings.jwt_leeway_seconds
        if self._jwks is not None:
            until = min(until, time.time() + JWKS_TRUST_SECONDS)
        if len(self._verified) >= VERIFIED_TOKENS:
            del self._verified[next(iter(self._verified))]
        self._verified[token] = (caller, until)
        return caller

    def _verify(self, token: str) -> tuple[Caller, float]:
        try:
            claims = jwt.decode(
                token,
                key=self._verification_key(token),
                algorithms=self.algorithms,
                audience=self.settings.jwt_audience,
                issuer=self.settings.jwt_issuer,
                leeway=self.settings.jwt_leeway_seconds,
                options={"require": ["exp", "sub"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthorized("The token has expired.") from exc
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"The token is not valid: {exc}.") from exc
        return self._caller_from(claims), float(claims["exp"])

    def _verification_key(self, token: str) -> Any:
        if self._jwks is not None:
            try:
                return self._jwks.get_signing_key_from_jwt(token).key
            except jwt.PyJWTError as exc:
                raise Unauthorized(f"The token is not valid: {exc}.") from exc
        if self._public_key is not None:
            return self._public_key
        return self._secret

    def _caller_from(self, claims: dict[str, Any]) -> Caller:
        try:
            role = Role(str(claims.get(self.settings.jwt_role_claim, "")).lower())
        except ValueError as exc:
            raise Unauthorized("The token names no known role (member, admin, operator).") from exc
        raw_org = claims.get(self.settings.jwt_org_claim)
        if role is Role.OPERATOR:
            org_id = None
        else:
            try:
                org_id = uuid.UUID(str(raw_org))
            except ValueError as exc:
                raise Unauthorized("The token names no organization (UUID).") from exc
        return Caller(subject=str(claims["sub"]), role=role, org_id=org_id)

"""Minting and verifying JWTs (DESIGN §3).

Embedded default: HS256 with a secret generated into the data directory on first start.
With an identity provider: RS256/ES256 verified with a PEM public key or a JWKS URL.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import secrets
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import jwt

from questline.config import SECRET_FILE_NAME, Settings, private_dir
from questline.web.errors import Unauthorized
from questline.web.identity import Caller, Role, Via


def load_or_create_secret(settings: Settings) -> str:
    """The HS256 secret: configured, or kept in the data directory (created once)."""
    if settings.jwt_secret is not None:
        return _long_enough(settings.jwt_secret, "QUESTLINE_JWT_SECRET")
    return _secret_kept_in(settings.data_dir)


@functools.lru_cache(maxsize=16)
def _secret_kept_in(data_dir: Path) -> str:
    """The secret kept in ``data_dir``, created there once; read once a process: the
    sealers of answers, webhooks and xAPI ask for it on every write, and the file never
    changes under a running process."""
    path = private_dir(data_dir) / SECRET_FILE_NAME
    try:
        return _long_enough(path.read_text().strip(), str(path))
    except FileNotFoundError:
        return _create_secret(path)


def _create_secret(path: Path) -> str:
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


MIN_SECRET_BYTES = 32


class WeakSecret(ValueError):
    """The HS256 secret is shorter than ``MIN_SECRET_BYTES``: refused at start."""


def _long_enough(secret: str, where: str) -> str:
    if len(secret.encode()) < MIN_SECRET_BYTES:
        raise WeakSecret(
            f"The JWT signing secret in {where} is {len(secret.encode())} bytes; "
            f"use at least {MIN_SECRET_BYTES} (e.g. `openssl rand -base64 48`)."
        )
    return secret


VERIFIED_TOKENS = 10_000
"""Verified tokens remembered per process (about 4 MB at most)."""
JWKS_TRUST_SECONDS = 60.0
"""With an identity provider's key set, a verified token is trusted this long at most, so
that a key withdrawn from the set stops working within it."""


class TokenService:
    """Verifies bearer tokens and mints the embedded default's tokens."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.algorithms = [a for a in settings.jwt_algorithms if a.lower() != "none"]
        if settings.jwt_jwks_url:  # its HTTP client only with an identity provider's keys
            from questline.auth.jwks import JwksCache
        self._jwks = (
            JwksCache(
                settings.jwt_jwks_url,
                timeout=settings.jwt_jwks_timeout_seconds,
                ttl=settings.jwt_jwks_ttl_seconds,
                min_refetch_seconds=settings.jwt_jwks_min_refetch_seconds,
            )
            if settings.jwt_jwks_url
            else None
        )
        self._public_key = settings.jwt_public_key
        self._secret = (
            load_or_create_secret(settings)
            if any(a.startswith("HS") for a in self.algorithms)
            else None
        )
        self._verified: dict[str, tuple[Caller, float]] = {}
        self._keys_seen: object = None

    def mint(
        self,
        *,
        role: Role,
        org_id: uuid.UUID | None,
        subject: str = "cli",
        lifetime: dt.timedelta | None = None,
        email: str | None = None,
    ) -> str:
        """A signed token; ``email`` (the ``email`` claim) names the organization's member
        the caller is (``members.callers``)."""
        if self._secret is None:
            raise RuntimeError("tokens are issued by the identity provider, not by Questline")
        if role is Role.OPERATOR and org_id is not None:
            raise ValueError("an operator token carries no organization")
        if role is not Role.OPERATOR and org_id is None:
            raise ValueError("member, admin and scim tokens need an organization")
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
        if email is not None:
            claims["email"] = email
        if self.settings.jwt_issuer:
            claims["iss"] = self.settings.jwt_issuer
        if self.settings.jwt_audience:
            claims["aud"] = self.settings.jwt_audience
        return jwt.encode(claims, self._secret, algorithm="HS256")

    def keys_rotated(self) -> None:
        """Forget every verified token: called when the verification keys change."""
        self._verified.clear()

    def remembered(self, token: str) -> Caller | None:
        """The caller of a token verified before and not expired since, else None.

        Verified tokens are remembered (at most ``VERIFIED_TOKENS``, oldest dropped
        first) until their ``exp`` plus the leeway the check allows, and with a JWKS at
        most ``JWKS_TRUST_SECONDS``; ``keys_rotated`` forgets them all. A repeated token
        then costs a dictionary look-up instead of a signature check.
        """
        if self._jwks is not None and self._jwks.current_set is not self._keys_seen:
            self._keys_seen = self._jwks.current_set  # a new key set: trust it anew
            self.keys_rotated()
        found = self._verified.get(token)
        if found is None:
            return None
        caller, until = found
        if time.time() < until:
            return caller
        del self._verified[token]
        return None

    def _remember(self, token: str, caller: Caller, expires: float) -> Caller:
        until = expires + self.settings.jwt_leeway_seconds
        if self._jwks is not None:
            until = min(until, time.time() + JWKS_TRUST_SECONDS)
        if len(self._verified) >= VERIFIED_TOKENS:
            del self._verified[next(iter(self._verified))]
        self._verified[token] = (caller, until)
        return caller

    async def verify_async(self, token: str) -> Caller:
        """``verify``, fetching an identity provider's key without blocking the loop."""
        known = self.remembered(token)
        if known is not None:
            return known
        if self._jwks is not None:
            from questline.auth.jwks import key_id_of

            return self._decode(token, await self._jwks.key_for(key_id_of(token)))
        return self.verify(token)

    def verify(self, token: str) -> Caller:
        known = self.remembered(token)
        if known is not None:
            return known
        return self._decode(token, self._verification_key(token))

    def _decode(self, token: str, key: Any) -> Caller:
        try:
            claims = jwt.decode(
                token,
                key=key,
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
        return self._remember(token, self._caller_from(claims), float(claims["exp"]))

    def _verification_key(self, token: str) -> Any:
        if self._jwks is not None:  # no I/O here: only keys already fetched
            from questline.auth.jwks import key_id_of

            key = self._jwks.cached_key(key_id_of(token))
            if key is None:
                raise Unauthorized("The token is not valid: its signing key is not known yet.")
            return key
        if self._public_key is not None:
            return self._public_key
        return self._secret

    def _caller_from(self, claims: dict[str, Any]) -> Caller:
        try:
            role = Role(str(claims.get(self.settings.jwt_role_claim, "")).lower())
        except ValueError as exc:
            raise Unauthorized(
                "The token names no known role (member, admin, operator, scim)."
            ) from exc
        raw_org = claims.get(self.settings.jwt_org_claim)
        if role is Role.OPERATOR:
            org_id = None
        else:
            try:
                org_id = uuid.UUID(str(raw_org))
            except ValueError as exc:
                raise Unauthorized("The token names no organization (UUID).") from exc
        email = claims.get("email")
        return Caller(
            subject=str(claims["sub"]),
            role=role,
            org_id=org_id,
            email=email if isinstance(email, str) else None,
            # A scim token is a directory's: its changes say they came through SCIM.
            via=Via.SCIM if role is Role.SCIM else Via.TOKEN,
        )

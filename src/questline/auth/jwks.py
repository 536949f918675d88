"""An identity provider's signing keys (JWKS), fetched without blocking the event loop.

PyJWT's ``PyJWKClient`` fetches with blocking ``urllib`` on the calling thread: called
from a request, a JWKS host that accepted the connection and never answered froze the
whole process. Here:

* keys are fetched with ``httpx.AsyncClient`` under a timeout
  (``QUESTLINE_JWT_JWKS_TIMEOUT_SECONDS``, 5 s);
* cached per key id for ``QUESTLINE_JWT_JWKS_TTL_SECONDS`` (300 s);
* one fetch at a time (single-flight): a thousand requests arriving with a new key id
  wait for the same fetch;
* a key past its TTL is still used while a refresh runs in the background (served
  stale), and stays in use if the refresh fails;
* an unknown key id refetches at most once every
  ``QUESTLINE_JWT_JWKS_MIN_REFETCH_SECONDS`` (10 s), counted
  from the end of the last fetch, so that forged key ids cannot make the service hammer
  its identity provider (a fetch that used its whole timeout does not shorten the pause:
  one request verifies its token twice, in the rate limiter and in the route, and both
  must be answered by the same failed fetch however slow the machine is).

A token whose key cannot be had because the provider is unreachable is 503 (the
service cannot verify right now), not 401 (the token may be fine).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import jwt

from questline.web.errors import ServiceUnavailable, Unauthorized

logger = logging.getLogger("questline.auth.jwks")


class JwksCache:
    def __init__(
        self,
        url: str,
        *,
        timeout: float = 5.0,
        ttl: float = 300.0,
        min_refetch_seconds: float = 10.0,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.ttl = ttl
        self.min_refetch_seconds = min_refetch_seconds
        self._keys: dict[str | None, Any] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._refreshing: asyncio.Task[None] | None = None
        self.fetches = 0
        """How many fetches were started (observable by tests and metrics)."""

    def cached_key(self, kid: str | None) -> Any | None:
        """The key of ``kid`` if cached (fresh or stale), without any I/O."""
        return self._keys.get(kid)

    async def key_for(self, kid: str | None) -> Any:
        """The verification key of ``kid``: cached, served stale while refreshing, or
        fetched (one fetch shared by every waiting request)."""
        key = self._keys.get(kid)
        if key is not None:
            if not self._fresh():
                self._start_refresh()  # serve stale meanwhile
            return key
        if self._may_refetch():
            await asyncio.shield(self._start_refresh())
        key = self._keys.get(kid)
        if key is None:
            if self._fetched_at is None:
                raise ServiceUnavailable(
                    "The identity provider's keys cannot be fetched right now; retry shortly.",
                    headers={"Retry-After": "5"},
                )
            raise Unauthorized("The token is not valid: its signing key is unknown.")
        return key

    def _fresh(self) -> bool:
        return self._fetched_at is not None and time.monotonic() - self._fetched_at < self.ttl

    def _may_refetch(self) -> bool:
        if self._refreshing is not None and not self._refreshing.done():
            return True  # join the fetch under way
        if self._attempted_at is None:
            return True
        return time.monotonic() - self._attempted_at >= self.min_refetch_seconds

    def _start_refresh(self) -> asyncio.Task[None]:
        if self._refreshing is None or self._refreshing.done():
            self.fetches += 1
            self._refreshing = asyncio.get_running_loop().create_task(self._refresh())
        return self._refreshing

    async def _refresh(self) -> None:
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.get(self.url, headers={"Accept": "application/json"})
                response.raise_for_status()
                document = response.json()
            keys = _keys_of(document)
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
            logger.warning("JWKS fetch from the identity provider failed: %s", type(exc).__name__)
            return
        finally:
            self._attempted_at = time.monotonic()
        self._keys = keys
        self._fetched_at = time.monotonic()


def _keys_of(document: Any) -> dict[str | None, Any]:
    """Signing keys by key id; a set of exactly one key also serves tokens without kid."""
    keys: dict[str | None, Any] = {}
    for jwk in jwt.PyJWKSet.from_dict(document).keys:
        if jwk.public_key_use in (None, "sig"):
            keys[jwk.key_id] = jwk.key
    if len(keys) == 1:
        keys[None] = next(iter(keys.values()))
    return keys


def key_id_of(token: str) -> str | None:
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.PyJWTError as exc:
        raise Unauthorized(f"The token is not valid: {exc}.") from exc
    return kid if isinstance(kid, str) else None

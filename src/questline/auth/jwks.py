"""An identity provider's signing keys (JWKS), fetched without blocking the event loop,
in the service's one key-set cache (``outbound.key_sets``).

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

from typing import Any

import jwt

from questline.outbound import fetching
from questline.outbound.key_sets import CachedKeys, KeySets
from questline.web.errors import ServiceUnavailable, Unauthorized

MAX_DOCUMENT_BYTES = 512 * 1024


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
        self.key_sets = KeySets(self._fetch, ttl=ttl, refetch_floor=min_refetch_seconds)
        self._read: CachedKeys | None = None
        self._keys: dict[str | None, Any] = {}

    @property
    def fetches(self) -> int:
        """How many fetches were started (observable by tests and metrics)."""
        return self.key_sets.fetches

    @property
    def current_set(self) -> CachedKeys | None:
        """The key set in use (a new object after each fetch), without any I/O."""
        return self.key_sets.cached(self.url)

    async def _fetch(self, url: str) -> Any:
        # The operator configured this address (an identity provider inside their
        # network is common): private addresses are allowed, the connection is still
        # pinned to the address resolved.
        return await fetching.get_json(
            url,
            allow_private=True,
            http_timeout=self.timeout,
            max_bytes=MAX_DOCUMENT_BYTES,
            what="identity provider's key set",
        )

    def _pyjwt_keys(self, cached: CachedKeys | None) -> dict[str | None, Any]:
        if cached is not self._read:
            self._keys = _keys_of(cached.document) if cached is not None else {}
            self._read = cached
        return self._keys

    def cached_key(self, kid: str | None) -> Any | None:
        """The key of ``kid`` if cached (fresh or stale), without any I/O."""
        return self._pyjwt_keys(self.current_set).get(kid)

    async def key_for(self, kid: str | None) -> Any:
        """The verification key of ``kid``: cached, served stale while refreshing, or
        fetched (one fetch shared by every waiting request)."""
        try:
            cached = await self.key_sets.keys(self.url)
        except fetching.FetchFailed as exc:
            raise ServiceUnavailable(
                "The identity provider's keys cannot be fetched right now; retry shortly.",
                headers={"Retry-After": "5"},
            ) from exc
        key = self._pyjwt_keys(cached).get(kid)
        if key is None:
            refreshed = await self.key_sets.refreshed(self.url, cached)
            if refreshed is not None:
                key = self._pyjwt_keys(refreshed).get(kid)
        if key is None:
            raise Unauthorized("The token is not valid: its signing key is unknown.")
        return key


def _keys_of(document: Any) -> dict[str | None, Any]:
    """Signing keys by key id; a set of exactly one key also serves tokens without kid."""
    keys: dict[str | None, Any] = {}
    try:
        found = jwt.PyJWKSet.from_dict(document).keys
    except jwt.PyJWTError:
        return keys
    for jwk in found:
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

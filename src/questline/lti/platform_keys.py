"""Platforms' public keys (their JWKS), fetched and cached per process.

* Cached per key set URL for ``QUESTLINE_LTI_KEYSET_TTL_SECONDS`` (1 hour), then fetched
  again by the next launch; at most ``MAX_KEY_SETS`` sets are kept (least recently
  fetched out).
* One fetch per URL at a time: a class opening the course at 9:00 shares it.
* A launch signed by a key id the cached set lacks (the platform rotated its keys)
  fetches the set again, at most once every ``KEY_REFETCH_SECONDS``: forged key ids
  cannot make the service hammer the platform.
* The URL must resolve to public addresses (unless ``QUESTLINE_LTI_ALLOW_PRIVATE_URLS``),
  the connection goes to the address checked, redirects are not followed and answers
  are read up to ``MAX_DOCUMENT_BYTES``.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from starlette.datastructures import State

from questline.config import Settings
from questline.outbound import addresses
from questline.sso.provider import tls_context

MAX_DOCUMENT_BYTES = 256 * 1024
MAX_KEY_SETS = 1024
KEY_REFETCH_SECONDS = 10.0


class KeysUnreachable(Exception):
    """The key set cannot be had; the message says why (for the log)."""


@dataclass(frozen=True, slots=True)
class CachedKeys:
    key_set: KeySet
    fetched_at: float


async def get_json(url: str, *, settings: Settings, what: str) -> Any:
    """GET ``url`` (checked against SSRF, pinned to the checked address), bounded in
    time and size; the JSON it answers."""
    try:
        target = await addresses.check(url, allow_private=settings.lti_allow_private_urls)
    except addresses.UnsafeUrl as exc:
        raise KeysUnreachable(f"The {what} cannot be fetched: {exc}") from exc
    body = bytearray()
    try:
        async with (
            httpx.AsyncClient(
                timeout=settings.lti_http_timeout_seconds,
                follow_redirects=False,
                trust_env=False,
                verify=tls_context(),
            ) as client,
            client.stream(
                "GET",
                addresses.pinned_url(target),
                headers={"Accept": "application/json", "host": httpx.URL(url).netloc.decode()},
                extensions={"sni_hostname": target.host},
            ) as answer,
        ):
            if answer.status_code != 200:
                raise KeysUnreachable(f"The {what} at {url} answered HTTP {answer.status_code}.")
            async for chunk in answer.aiter_bytes():
                body.extend(chunk)
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise KeysUnreachable(f"The {what} at {url} is too large.")
    except httpx.HTTPError as exc:
        raise KeysUnreachable(f"The {what} at {url} failed ({type(exc).__name__}).") from exc
    try:
        return httpx.Response(200, content=bytes(body)).json()
    except ValueError as exc:
        raise KeysUnreachable(f"The {what} at {url} is not JSON.") from exc


async def fetch_key_set(url: str, *, settings: Settings) -> KeySet:
    document = await get_json(url, settings=settings, what="platform's key set")
    try:
        key_set = KeySet.import_key_set(cast(Any, document))
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise KeysUnreachable(f"The key set at {url} holds an unreadable key.") from exc
    if not key_set.keys:
        raise KeysUnreachable(f"The key set at {url} holds no key.")
    return key_set


@dataclass
class KeySetDirectory:
    """The platforms' key sets this process knows, by URL (``key_sets_of``)."""

    settings: Settings
    fetches: int = 0
    """Fetches started (observable by tests)."""
    _cache: OrderedDict[str, CachedKeys] = field(default_factory=OrderedDict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def _fresh(self, url: str) -> CachedKeys | None:
        found = self._cache.get(url)
        if (
            found is None
            or time.monotonic() - found.fetched_at >= self.settings.lti_keyset_ttl_seconds
        ):
            return None
        return found

    async def _fetch(self, url: str) -> CachedKeys:
        self.fetches += 1
        cached = CachedKeys(await fetch_key_set(url, settings=self.settings), time.monotonic())
        self._cache[url] = cached
        self._cache.move_to_end(url)
        while len(self._cache) > MAX_KEY_SETS:
            oldest = next(iter(self._cache))
            self._cache.pop(oldest)
            self._locks.pop(oldest, None)
        return cached

    async def keys(self, url: str) -> CachedKeys:
        """The key set at ``url``: cached while fresh, else fetched (once for everyone
        waiting)."""
        found = self._fresh(url)
        if found is not None:
            return found
        async with self._locks.setdefault(url, asyncio.Lock()):
            return self._fresh(url) or await self._fetch(url)

    async def refreshed(self, url: str, seen: CachedKeys) -> CachedKeys | None:
        """The set fetched again for a key id ``seen`` lacks; None when ``seen`` is more
        recent than ``KEY_REFETCH_SECONDS`` (nothing new to hope for)."""
        async with self._locks.setdefault(url, asyncio.Lock()):
            current = self._cache.get(url, seen)
            if current.fetched_at > seen.fetched_at:
                return current
            if time.monotonic() - current.fetched_at < KEY_REFETCH_SECONDS:
                return None
            return await self._fetch(url)


def key_sets_of(app_state: State) -> KeySetDirectory:
    """The application's key set directory, made on first use (on ``app.state``)."""
    directory = getattr(app_state, "lti_key_sets", None)
    if directory is None:
        directory = KeySetDirectory(app_state.questline.settings)
        app_state.lti_key_sets = directory
    return cast(KeySetDirectory, directory)

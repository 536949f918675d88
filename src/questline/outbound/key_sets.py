"""Other services' public keys (JSON Web Key Sets), fetched and cached per process: the
one cache behind the bearer-token check (an identity provider's keys), single sign-on
(an OpenID provider's) and LTI (a learning platform's).

* Cached by URL for ``ttl`` seconds; past that the cached set is still used while one
  refresh runs in the background (served stale), and stays in use if it fails.
* One fetch per URL at a time (single flight): a class opening the course at 9:00, or a
  thousand requests with a new key id, share it. A fetch is shielded: a caller that
  gives up does not cancel it for the others.
* A key id the cached set lacks (the other side rotated its keys) fetches the set again,
  at most once every ``refetch_floor`` seconds counted from the end of the last
  attempt, so that forged key ids cannot make the service hammer anyone.
* At most ``max_sets`` URLs are kept (least recently fetched out).

How a document is fetched is the caller's (``outbound.fetching.get_json`` with the
caller's address rules and deadline); a failure is ``FetchFailed``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from questline.outbound.fetching import FetchFailed

logger = logging.getLogger("questline.outbound.key_sets")

FetchDocument = Callable[[str], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class CachedKeys:
    """One fetched key set: as published, and read by joserfc."""

    document: dict[str, Any]
    key_set: KeySet
    fetched_at: float


def read_key_set(url: str, document: Any) -> CachedKeys:
    """The key set of a fetched document, or ``FetchFailed`` when it holds none."""
    if not isinstance(document, dict):
        raise FetchFailed(f"The key set at {url} is not a JSON object.")
    try:
        key_set = KeySet.import_key_set(cast(Any, document))
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise FetchFailed(f"The key set at {url} holds an unreadable key.") from exc
    if not key_set.keys:
        raise FetchFailed(f"The key set at {url} holds no key.")
    return CachedKeys(document=document, key_set=key_set, fetched_at=time.monotonic())


@dataclass
class _Entry:
    keys: CachedKeys | None = None
    attempted_at: float | None = None
    """When the last fetch ended, whatever its outcome."""
    failure: str | None = None
    """Why the last fetch failed (None after a success)."""
    fetching: asyncio.Task[None] | None = None


@dataclass
class KeySets:
    fetch_document: FetchDocument
    ttl: float
    refetch_floor: float = 10.0
    max_sets: int = 1024
    fetches: int = 0
    """Fetches started (observable by tests and metrics)."""
    _entries: OrderedDict[str, _Entry] = field(default_factory=OrderedDict)

    def cached(self, url: str) -> CachedKeys | None:
        """The key set of ``url`` if one was fetched (fresh or stale), without any I/O."""
        entry = self._entries.get(url)
        return entry.keys if entry is not None else None

    async def keys(self, url: str) -> CachedKeys:
        """The key set at ``url``: cached (a stale one refreshed in the background), or
        fetched, once for everyone waiting; ``FetchFailed`` when none can be had."""
        entry = self._entry(url)
        if entry.keys is not None:
            if time.monotonic() - entry.keys.fetched_at >= self.ttl:
                self._start(url, entry)
            return entry.keys
        if self._may_fetch(entry):
            await asyncio.shield(self._start(url, entry))
        if entry.keys is None:
            raise FetchFailed(entry.failure or f"The key set at {url} cannot be fetched.")
        return entry.keys

    async def refreshed(self, url: str, seen: CachedKeys) -> CachedKeys | None:
        """The set fetched again for a key id ``seen`` lacks: a newer one (fetched by
        now or by this call), or None when the last attempt is more recent than the
        floor (nothing new to hope for yet)."""
        entry = self._entry(url)
        if entry.keys is not None and entry.keys.fetched_at > seen.fetched_at:
            return entry.keys
        if not self._may_fetch(entry):
            return None
        await asyncio.shield(self._start(url, entry))
        if entry.keys is not None and entry.keys.fetched_at > seen.fetched_at:
            return entry.keys
        return None

    def remember(self, url: str, keys: CachedKeys) -> None:
        """Keep a set fetched elsewhere (a provider checked while it is configured)."""
        entry = self._entry(url)
        entry.keys, entry.failure, entry.attempted_at = keys, None, keys.fetched_at
        self._entries.move_to_end(url)

    def forget(self, url: str) -> None:
        self._entries.pop(url, None)

    def _entry(self, url: str) -> _Entry:
        entry = self._entries.get(url)
        if entry is None:
            entry = self._entries[url] = _Entry()
            while len(self._entries) > self.max_sets:
                self._entries.popitem(last=False)
        return entry

    def _may_fetch(self, entry: _Entry) -> bool:
        if entry.fetching is not None and not entry.fetching.done():
            return True  # join the fetch under way
        if entry.attempted_at is None:
            return True
        return time.monotonic() - entry.attempted_at >= self.refetch_floor

    def _start(self, url: str, entry: _Entry) -> asyncio.Task[None]:
        if entry.fetching is None or entry.fetching.done():
            self.fetches += 1
            entry.fetching = asyncio.get_running_loop().create_task(self._fetch(url, entry))
        return entry.fetching

    async def _fetch(self, url: str, entry: _Entry) -> None:
        try:
            keys = read_key_set(url, await self.fetch_document(url))
        except FetchFailed as exc:
            entry.failure = str(exc)
            logger.warning("key set fetch failed: %s", exc)
            return
        finally:
            entry.attempted_at = time.monotonic()
        entry.keys, entry.failure = keys, None
        self._entries[url] = entry
        self._entries.move_to_end(url)

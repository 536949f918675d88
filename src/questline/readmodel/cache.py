"""A bounded LRU of ready-to-send response bodies, measured in bytes."""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

Key = tuple[uuid.UUID, str, str, bytes, bytes]
"""(organization, variant (the caller's role), path, query string, host)."""

ENTRY_OVERHEAD = 400
"""Bytes counted per entry beyond its body and headers (key, object headers)."""


@dataclass(frozen=True, slots=True)
class Entry:
    version: int
    """The organization's version known before the body was built (never newer than
    the data it was built from, so a later version always replaces it)."""
    body: bytes
    etag: str
    headers: tuple[tuple[str, str], ...] = ()
    expires_at: float | None = None
    """Wall-clock time (``time.time()``) after which the body is no longer true even
    at the same version: a season's view changes by itself at its freeze and its end."""
    depends: frozenset[str] | None = None
    """The scopes the body is built from (``questline.readmodel.moved``); ``None``: it is
    never carried to a newer version, any write makes it stale."""
    raw_headers: tuple[tuple[bytes, bytes], ...] = field(init=False, compare=False, repr=False)
    """The response's headers as ASGI sends them, made once with the entry."""

    def __post_init__(self) -> None:
        raw = (
            (b"content-length", str(len(self.body)).encode("latin-1")),
            (b"content-type", b"application/json"),
            (b"etag", self.etag.encode("latin-1")),
            *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers),
        )
        object.__setattr__(self, "raw_headers", raw)

    def current(self, version: int) -> bool:
        """Whether the entry may be served at ``version`` now."""
        return self.version == version and (
            self.expires_at is None or time.time() < self.expires_at
        )

    @property
    def size(self) -> int:
        return len(self.body) + sum(len(k) + len(v) for k, v in self.headers) + ENTRY_OVERHEAD


@dataclass(frozen=True, slots=True)
class Memo:
    """A value many entries of one organization are built from (its discipline tree,
    its leaderboard order), kept beside the bodies and counted in the same bound."""

    version: int
    value: Any
    size: int
    depends: frozenset[str] | None = None
    """As an entry's (``Entry.depends``)."""


def memo_key(organization_id: uuid.UUID, name: str) -> Key:
    """A memo's place in the cache (no request's key: no role is called ``memo``)."""
    return (organization_id, "memo", name, b"", b"")


class ByteLRU:
    """Least recently used entries go first once the bodies and memos exceed
    ``max_bytes``.

    An entry larger than a quarter of the bound is not kept (a 100,000-team list would
    push everything else out); it is built for each request instead. A memo may take
    half (``largest_memo``): its builder keeps under that or computes without it.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max(0, max_bytes)
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.revalidated = 0
        """Misses answered by a stale entry whose resource's own ETag had not changed."""
        self.carried = 0
        """Stale entries kept at a newer version that moved nothing of theirs."""
        self.memos_carried = 0
        """The same of memos."""
        self._entries: OrderedDict[Key, Entry | Memo] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def largest_memo(self) -> int:
        return self.max_bytes // 2

    def get(self, key: Key) -> Entry | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            if isinstance(entry, Memo):  # (a request's key never names one)
                return None
        return entry

    def memo(self, key: Key) -> Memo | None:
        found = self._entries.get(key)
        if not isinstance(found, Memo):
            return None
        self._entries.move_to_end(key)
        return found

    def memos(self) -> list[Key]:
        return [key for key, kept in self._entries.items() if isinstance(kept, Memo)]

    def put(self, key: Key, entry: Entry | Memo) -> bool:
        """Keep ``entry`` unless it is too large or older than the one kept."""
        current = self._entries.get(key)
        if current is not None and current.version > entry.version:
            return False
        size = entry.size
        if size > (self.largest_memo if isinstance(entry, Memo) else self.max_bytes // 4):
            if current is not None:
                self._remove(key)
            return False
        if current is not None:
            self._remove(key)
        self._entries[key] = entry
        self.bytes += size
        while self.bytes > self.max_bytes and self._entries:
            oldest = next(iter(self._entries))
            self._remove(oldest)
        return True

    def _remove(self, key: Key) -> None:
        entry = self._entries.pop(key)
        self.bytes -= entry.size

    def drop_bodies(self) -> None:
        """Every body goes, the memos stay (what eviction does to a cold organization)."""
        self.forget([key for key, kept in self._entries.items() if isinstance(kept, Entry)])

    def forget(self, keys: list[Key]) -> None:
        for key in keys:
            if key in self._entries:
                self._remove(key)

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

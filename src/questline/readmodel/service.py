"""The read model of one process: versions, the byte cache, and building on a miss."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from sqlalchemy import make_url
from starlette.requests import HTTPConnection

from questline.config import Settings
from questline.readmodel.cache import ByteLRU, Entry, Key, Memo, memo_key
from questline.readmodel.changes import Changes
from questline.readmodel.footprint import footprint
from questline.readmodel.lean import LeanReader
from questline.readmodel.moved import MovedLog, Scopes
from questline.readmodel.sources import PostgresSource, SqliteSource, VersionSource
from questline.storage.db import Database, Moved

T = TypeVar("T")
KeptT = TypeVar("KeptT", Entry, Memo)

Build = Callable[[], Awaitable[Entry]]


class Declined(Exception):
    """A build that leaves the request to someone else: the fast lane's lean builder
    when the route must answer (not found, too large, changed since the stale entry).
    Raised inside ``ReadModel.load``, it is not shared with the build's waiters."""


class ReadModel:
    """What is read far more than written, kept as ready-to-send bytes.

    ``version(org)`` is the organization's newest committed version as this process
    knows it (see ``questline.readmodel.sources`` for how fresh that is); an entry is
    served only when it was built at exactly that version. Commits in this process
    advance the version before the committing request answers (read-your-writes).
    """

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.cache = ByteLRU(settings.read_model_max_bytes)
        self.changes = Changes(self.version)
        self.moved = MovedLog()
        """What this process's own commits moved (``carry``)."""
        self.source: VersionSource | None
        if db.is_sqlite:
            path = make_url(db.url).database or ""
            self.source = (
                SqliteSource(path, self.changes, self.invalidate_all)
                if path not in ("", ":memory:")
                else None
            )
        else:
            listen_url = settings.database_listen_url or db.url
            self.source = PostgresSource(
                db, listen_url, self.changes, self.invalidate_all, self.moved.record
            )
        self.lean = LeanReader(db, transaction_pooler=settings.database_transaction_pooler)
        self._inflight: dict[tuple[Key, int], asyncio.Future[Any]] = {}
        db.on_commit(self._committed)
        db.dispose_hooks.append(self.stop)

    async def version(self, organization_id: uuid.UUID) -> int | None:
        if self.source is None:
            return self.changes.known(organization_id) or 0
        return await self.source.current(organization_id)

    def _committed(self, notes: dict[Any, int], moved: Moved) -> None:
        if None in notes:
            self.invalidate_all()
        for organization_id, version in notes.items():
            if organization_id is not None:
                self.moved.record(organization_id, version, moved.get(organization_id))
                self.changes.advance(organization_id, version)

    def carry(
        self, organization_id: uuid.UUID, key: Key, entry: Entry | None, version: int
    ) -> Entry | None:
        """``entry`` (the one kept for ``key``), carried to ``version`` first when no
        version since it was built moved what it depends on
        (``questline.readmodel.moved``); the caller serves it if it is ``current`` at
        ``version``, else builds."""
        if entry is None or entry.expires_at is not None:
            return entry
        return self._carried(organization_id, key, entry, version) or entry

    def _carried(
        self, organization_id: uuid.UUID, key: Key, kept: KeptT, version: int
    ) -> KeptT | None:
        """``kept`` re-stamped at ``version`` and kept so, when nothing it depends on
        moved since; else None."""
        if not self._untouched(organization_id, kept, version):
            return None
        carried = dataclasses.replace(kept, version=version)
        self.cache.put(key, carried)
        if isinstance(carried, Memo):
            self.cache.memos_carried += 1
        else:
            self.cache.carried += 1
        return carried

    def _untouched(self, organization_id: uuid.UUID, kept: Entry | Memo, version: int) -> bool:
        depends = kept.depends
        return (
            depends is not None
            and kept.version < version
            and self.moved.untouched(organization_id, kept.version, version, depends)
        )

    def invalidate_all(self) -> None:
        self.cache.clear()
        self.moved.clear()
        self.changes.forget_all()
        if self.source is not None:
            self.source.forget_all()

    async def load(self, key: Key, version: int, build: Build) -> Entry:
        """The entry of ``key`` at ``version``: built once however many ask at once.
        A build that failed fails its waiters too (a database that is down is asked
        once); one that ``Declined`` is no answer, and each waiter builds its own."""

        async def build_and_keep() -> Entry:
            entry = await build()
            self.cache.put(key, entry)
            return entry

        return await self._once((key, version), build_and_keep)

    async def memo(
        self,
        organization_id: uuid.UUID,
        name: str,
        version: int,
        build: Callable[[], Awaitable[Any]],
        depends: Scopes | None = None,
    ) -> Any:
        """A value shared by many entries of the organization (the discipline tree under
        every overview), built once per version — once however many ask at once: the
        requests that miss together after a write (an organization's leaderboard order
        is a statement over all its teams) — and kept in the cache's bound (its size:
        ``footprint``). ``version`` < 0: no version is known, build without keeping it.
        ``depends``: what the value is built from, as an entry's (``carry``)."""
        if version < 0:
            return await build()
        key = memo_key(organization_id, name)
        found = self._memo_now(organization_id, key, version)
        if found is not None:
            return found.value

        async def build_and_keep() -> Any:
            value = await build()
            self.cache.put(key, Memo(version, value, footprint(value), depends))
            return value

        return await self._once((key, version), build_and_keep)

    async def _once(self, flight: tuple[Key, int], build: Callable[[], Awaitable[T]]) -> T:
        """``build``'s value, built once however many ask for ``flight`` at once (see
        ``load``); ``build`` keeps it where later requests find it."""
        running = self._inflight.get(flight)
        if running is not None:
            await asyncio.wait({running})
            if not running.cancelled() and not isinstance(running.exception(), Declined):
                return cast(T, running.result())
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._inflight[flight] = future
        try:
            value = await build()
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # retrieved: waiters re-raise it themselves
            raise
        finally:
            if self._inflight.get(flight) is future:
                del self._inflight[flight]
        future.set_result(value)
        return value

    def memo_at(self, organization_id: uuid.UUID, name: str, version: int) -> Any:
        """The memo ``name`` if it was built at exactly ``version``, or carried to it
        (else None)."""
        found = self._memo_now(organization_id, memo_key(organization_id, name), version)
        return None if found is None else found.value

    def _memo_now(self, organization_id: uuid.UUID, key: Key, version: int) -> Memo | None:
        found = self.cache.memo(key)
        if found is None or found.version == version:
            return found
        return self._carried(organization_id, key, found, version)

    @property
    def largest_memo(self) -> int:
        """The most bytes one memo may take and be kept."""
        return self.cache.largest_memo

    def forget_memos(self) -> None:
        self.cache.forget(self.cache.memos())

    async def stop(self) -> None:
        self.lean.close()
        if self.source is not None:
            await self.source.stop()


def readmodel_of(connection: HTTPConnection) -> ReadModel:
    """The application's read model (kept on ``app.state.readmodel``)."""
    return cast(ReadModel, connection.app.state.readmodel)

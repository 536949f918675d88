"""Serving a read from the read model: ``ETag``, ``If-None-Match`` → 304, bytes as kept.

An endpoint hands ``serve`` a function that builds the body (JSON bytes, orjson or
pydantic-core) with the request's session. On a hit nothing touches the database: the
route's session was never used, so no transaction was opened.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.dependencies.utils import request_params_to_args
from fastapi.responses import StreamingResponse
from pydantic import TypeAdapter
from sqlalchemy.ext.asyncio import AsyncSession

from questline.readmodel.cache import Entry, Key
from questline.readmodel.lean import LeanBuild, LeanEtag, LeanRequest, LeanUnavailable
from questline.readmodel.moved import Scopes
from questline.readmodel.service import Declined, ReadModel, readmodel_of
from questline.web import csvexport
from questline.web.identity import Caller
from questline.web.paths import canonical_uuid
from questline.web.state import app_state, request_state

JSON = "application/json"
BodyBuilder = Callable[[int], Awaitable[tuple[bytes, Mapping[str, str]]]]
CurrentEtag = Callable[[], Awaitable[str | None]]
"""The resource's own ``ETag`` now, in one cheap statement (``None``: the caller does not
see it any more)."""
"""Builds the body (and headers: ``ETag`` among them when the resource has its own) at
the organization's version given."""


def _default(value: object) -> str:
    # asyncpg hands back its own UUID subclass, which orjson does not take as a UUID.
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: object) -> bytes:
    """JSON bytes as the API writes them: UUIDs as strings, UTC times ending in ``Z``."""
    return orjson.dumps(value, default=_default, option=orjson.OPT_UTC_Z)


def model_bytes(adapter: TypeAdapter[Any], value: object) -> bytes:
    """A response model's JSON, as FastAPI would write it (by alias), without validating
    it again."""
    return adapter.dump_json(value, by_alias=True)


def version_etag(organization_id: uuid.UUID, version: int, variant: str) -> str:
    """A strong validator of everything the organization's reads return at ``version``."""
    return f'"{organization_id.hex[:12]}.{version}.{variant}"'


KEEP_UNTIL = "questline-keep-until"
"""A header a body's builder may return (never sent): the wall-clock time (seconds
since the epoch) after which the kept body must be built again, whatever the version
(a season's view changes by itself at its freeze and its end)."""


def keep_until(when: dt.datetime | None) -> dict[str, str]:
    """The builder's header for a body true until ``when`` (nothing: until the next
    version)."""
    return {} if when is None else {KEEP_UNTIL: repr(when.timestamp())}


DEPENDS_ALSO = "questline-depends-also"
"""A header a body's builder may return (never sent): scopes the body depends on beyond
its route's ``depends``, known only once it is built (where its team stands)."""


def depends_also(*scopes: str) -> dict[str, str]:
    """The builder's header for scopes found while building (``DEPENDS_ALSO``)."""
    return {DEPENDS_ALSO: " ".join(scopes)} if scopes else {}


def _sent_headers(built_headers: Mapping[str, str]) -> tuple[dict[str, str], float | None]:
    headers = dict(built_headers)
    until = headers.pop(KEEP_UNTIL, None)
    headers.pop(DEPENDS_ALSO, None)
    return headers, None if until is None else float(until)


def entry_of(
    organization_id: uuid.UUID,
    version: int,
    variant: str,
    body: bytes,
    built_headers: Mapping[str, str],
    depends: Scopes | None = None,
) -> Entry:
    """The cache entry of a body built at ``version`` (its own ``ETag`` if the builder
    gave one, else the organization's version's), built from ``depends``."""
    headers, expires_at = _sent_headers(built_headers)
    also = built_headers.get(DEPENDS_ALSO)
    if depends is not None and also:
        depends = depends | frozenset(also.split(" "))
    tag = headers.pop("ETag", None) or version_etag(organization_id, version, variant)
    return Entry(
        version=version,
        body=body,
        etag=tag,
        headers=tuple(headers.items()),
        expires_at=expires_at,
        depends=depends,
    )


def etag_matches(if_none_match: str, etag: str) -> bool:
    if if_none_match.strip() == "*":
        return True
    return any(
        tag.strip().removeprefix("W/") == etag for tag in if_none_match.split(",") if tag.strip()
    )


def not_modified(etag: str) -> Response:
    return Response(status_code=304, headers={"ETag": etag})


def variant_of(caller: Caller) -> str:
    """Which body of a URL a caller gets: members' bodies hide what only admins see."""
    return caller.role.value


def cache_key(request: Request, organization_id: uuid.UUID, variant: str) -> Key:
    scope = request.scope
    host = b""
    for name, value in scope["headers"]:
        if name == b"host":
            host = value
            break
    return (organization_id, variant, scope["path"], scope["query_string"], host)


def _reader(request: Request, variant: str | None = None) -> tuple[uuid.UUID, str]:
    """The organization and variant of the route's caller (a member route's)."""
    caller = request_state(request).caller
    if caller is None or caller.org_id is None:
        raise RuntimeError("a cached read needs a caller of an organization")
    return caller.org_id, variant or variant_of(caller)


async def serve(
    request: Request,
    *,
    build: BodyBuilder,
    own_etag: bool = False,
    variant: str | None = None,
    current_etag: CurrentEtag | None = None,
    depends: Scopes | None = None,
) -> Response:
    """The response of a cached read, for the route's caller.

    The caller's ``variant_of`` separates bodies that differ for the same URL. With
    ``own_etag`` the body's builder returns the resource's ``ETag`` (one that
    ``If-Match`` also accepts); by default the ETag is the organization's version's, and
    ``If-None-Match`` is answered 304 without building even when nothing is cached.
    ``variant`` replaces the caller's role where the body depends on more (the route's
    ``CachedRead`` then says how it is found: its ``variant``).

    ``current_etag`` (with ``own_etag``) says that the body is a function of the
    resource's own ``ETag`` — a strong validator, which ``If-Match`` relies on too. An
    entry made stale by the organization's version (any write of the organization: a
    completion, a new team) whose ``ETag`` is still the resource's is kept at the new
    version instead of built again: one statement in place of the build (a discipline's
    whole tree; docs/performance.md, "Revalidated entries").

    ``depends`` names what the body is built from (``questline.readmodel.moved``): a
    stale entry no write since moved is carried to the new version, with no statement.
    """
    organization_id, variant = _reader(request, variant)
    readmodel = readmodel_of(request)
    if_none_match = request.headers.get("if-none-match")
    version = await readmodel.version(organization_id)
    if version is None:  # no version source: build every time
        body, built = await build(-1)
        return Response(body, media_type=JSON, headers=_sent_headers(built)[0])
    key = cache_key(request, organization_id, variant)
    entry = readmodel.carry(organization_id, key, readmodel.cache.get(key), version)
    if entry is None or not entry.current(version):
        if not own_etag and if_none_match is not None:
            current = version_etag(organization_id, version, variant)
            if etag_matches(if_none_match, current):
                return not_modified(current)
        readmodel.cache.misses += 1
        stale = entry if own_etag and entry and entry.version < version else None
        if stale is not None and stale.expires_at is not None:
            stale = None  # a season's body changes by itself: never carried over

        async def build_entry() -> Entry:
            # On a replica, the entry must be built from at least this version.
            session = request_state(request).session
            await app_state(request).db.replicas.require_version(session, organization_id, version)
            # Read at or after ``version``: an unchanged ETag is still true at ``version``.
            if stale and current_etag and await current_etag() == stale.etag:
                return restamped(readmodel, stale, version)
            body, built_headers = await build(version)
            return entry_of(organization_id, version, variant, body, built_headers, depends)

        entry = await readmodel.load(key, version, build_entry)
    else:
        readmodel.cache.hits += 1
    return cached_response(entry, if_none_match)


def restamped(readmodel: ReadModel, stale: Entry, version: int) -> Entry:
    """``stale`` kept at ``version``: its resource's own ``ETag`` was read back unchanged
    at or after ``version`` (``serve``'s ``current_etag``, ``CachedRead``'s
    ``revalidate``)."""
    readmodel.cache.revalidated += 1
    return dataclasses.replace(stale, version=version)


STREAM_CHUNK_ROWS = 1_000
"""Items fetched from the cursor and sent per chunk of a streamed list."""

EncodeItems = Callable[[Sequence[Any]], bytes]
"""The JSON array of a chunk of rows (``[...]``; its brackets are dropped to join)."""


def _join(parts: list[bytes]) -> bytes:
    return b"[" + b",".join(part for part in parts if part) + b"]"


def _items(encoded: bytes) -> bytes:
    return encoded[1:-1]


async def _close(result: Any, session: AsyncSession) -> None:
    try:
        await result.close()
    finally:
        await session.close()


async def serve_list(
    request: Request, *, statement: Any, encode: EncodeItems, depends: Scopes | None = None
) -> Response:
    """A whole list (no paging) as the read model serves it: cached bytes while it is
    short, else **streamed**.

    On a miss the list is read through a server-side cursor (asyncpg's cursor on
    PostgreSQL, ``fetchmany`` on SQLite) of a session of its own, in one read-only
    snapshot (one statement). Up to ``read_model_stream_rows`` items it is built, kept
    and sent like any cached read. Past that, the items read so far are sent and the
    rest follow in chunks of ``STREAM_CHUNK_ROWS`` as they are fetched (chunked
    transfer encoding): the server never holds more than the threshold and a chunk, and
    the event loop is free between chunks. A streamed list is not cached (it would push
    everything else out) but carries the version's ``ETag``, so ``If-None-Match``
    still answers 304 while nothing changed. ``depends``: as ``serve``'s.
    """
    state = app_state(request)
    if state.db.replicas.enabled:
        return await _serve_list_routed(
            request, statement=statement, encode=encode, depends=depends
        )
    organization_id, variant = _reader(request)
    readmodel = readmodel_of(request)
    threshold = state.settings.read_model_stream_rows
    if_none_match = request.headers.get("if-none-match")
    version = await readmodel.version(organization_id)
    key = cache_key(request, organization_id, variant)
    etag: str | None = None
    if version is not None:
        etag = version_etag(organization_id, version, variant)
        entry = readmodel.carry(organization_id, key, readmodel.cache.get(key), version)
        if entry is not None and entry.version == version:
            readmodel.cache.hits += 1
            return cached_response(entry, if_none_match)
        if if_none_match is not None and etag_matches(if_none_match, etag):
            return not_modified(etag)
        readmodel.cache.misses += 1
    session = state.db.new_session(write=False)
    try:
        result = await session.stream(
            statement.execution_options(yield_per=STREAM_CHUNK_ROWS, stream_results=True)
        )
        first = list(await result.fetchmany(threshold + 1))
    except BaseException:
        await asyncio.shield(session.close())
        raise
    if len(first) <= threshold:
        await _close(result, session)
        body = _join([_items(encode(first))])
        if version is None or etag is None:
            return Response(body, media_type=JSON)
        entry = Entry(version=version, body=body, etag=etag, depends=depends)
        readmodel.cache.put(key, entry)
        return cached_response(entry, if_none_match)

    async def chunks() -> AsyncIterator[bytes]:
        try:
            separator = b"["
            for start in range(0, len(first), STREAM_CHUNK_ROWS):
                yield separator + _items(encode(first[start : start + STREAM_CHUNK_ROWS]))
                separator = b","
            first.clear()
            while batch := await result.fetchmany(STREAM_CHUNK_ROWS):
                yield b"," + _items(encode(batch))
            yield b"]"
        finally:
            await asyncio.shield(_close(result, session))

    headers = {"ETag": etag} if etag is not None else {}
    return StreamingResponse(chunks(), media_type=JSON, headers=headers)


async def _serve_list_routed(
    request: Request, *, statement: Any, encode: EncodeItems, depends: Scopes | None
) -> Response:
    """A whole list with read replicas configured: read through the request's own session,
    which routes it (a replica only when it holds the caller's last write and the
    organization's version, else the primary; a failing replica is retried on the
    primary by ``web.readafter.call_endpoint``), and built whole like any cached read.

    A session of the list's own (the streaming path) would bypass that routing: an
    entry built from a replica behind the version would be cached as that version."""

    async def build(_version: int) -> tuple[bytes, dict[str, str]]:
        rows = (await request_state(request).session.execute(statement)).all()
        return _join([_items(encode(rows))]), {}

    return await serve(request, build=build, depends=depends)


class EntryResponse(Response):
    """A kept entry sent as it was kept: its bytes, ``Content-Type``, ``ETag`` and own
    headers, as Starlette's ``Response`` would write them, without building them again
    for every hit (its ``raw_headers`` are made once, with the entry)."""

    media_type = JSON

    def __init__(self, entry: Entry) -> None:
        self.status_code = 200
        self.background = None
        self.body = entry.body
        self.raw_headers = list(entry.raw_headers)


def cached_response(entry: Entry, if_none_match: str | None) -> Response:
    if if_none_match is not None and etag_matches(if_none_match, entry.etag):
        return not_modified(entry.etag)
    return EntryResponse(entry)


EarlyVariant = Callable[[Request, Caller, ReadModel, uuid.UUID], Awaitable[str | None]]
"""The variant of a caller's body when the role alone does not say it (a team's overview
shows its own members more), from what the read model keeps; ``None``: not known
without the database (the route answers, and finds it)."""


class CachedRead:
    """The early answer of a read the read model serves (``answers_early``): the entry
    ``serve`` keeps for exactly this request — same key, same variant, same ``ETag`` and
    304, same bytes and headers — when it is current.

    With ``miss`` (a lean builder) and ``resource`` (the path parameter it reads, if
    any), a miss of a URL whose query names only parameters in ``query`` (none by
    default) is built here too: one statement on the driver (``questline.readmodel.lean``),
    kept and sent like the route's. Those parameters are validated by the route's own
    declaration, with FastAPI's own function; a value the route would refuse leaves the
    request to the route (its 422). With ``revalidate``
    (the lean form of the route's ``current_etag``, see ``serve``) and ``resource``, a
    stale entry whose resource's ``ETag`` is unchanged is kept at the new version here
    (before any miss is built: it is the cheaper of the two).
    Everything else — no entry, a stale one otherwise, CSV, an ``If-None-Match`` that
    does not match (the route judges validators), the builder's ``None`` — is left to
    the route.
    """

    def __init__(
        self,
        *,
        miss: LeanBuild | None = None,
        revalidate: LeanEtag | None = None,
        resource: str | None = None,
        query: Sequence[str] = (),
        variant: EarlyVariant | None = None,
        depends: Callable[[uuid.UUID | None], Scopes] | None = None,
    ) -> None:
        self.miss = miss
        self.depends = depends
        self.revalidate = revalidate
        self.resource = resource
        self.query = frozenset(query)
        self.variant = variant
        self._fields: dict[int, list[Any]] = {}
        """The route's declared fields of ``query``, by route (found once)."""

    async def __call__(self, request: Request, caller: Caller) -> Response | None:
        organization_id = caller.org_id
        if organization_id is None or csvexport.wants_csv(request):
            return None
        readmodel = readmodel_of(request)
        variant: str | None = variant_of(caller)
        if self.variant is not None:
            variant = await self.variant(request, caller, readmodel, organization_id)
            if variant is None:
                return None
        assert variant is not None
        key = cache_key(request, organization_id, variant)
        entry = readmodel.cache.get(key)
        lean = self.miss is not None and readmodel.lean.available and self._lean_query(request)
        if entry is None and not lean:
            return None
        try:
            version = await readmodel.version(organization_id)
        except Exception:  # the database is unreachable: the route answers (503, retries)
            return None
        if version is None:
            return None
        entry = readmodel.carry(organization_id, key, entry, version)
        if entry is not None and entry.current(version):
            readmodel.cache.hits += 1
        elif (
            entry is not None
            and self.revalidate is not None
            and readmodel.lean.available
            and entry.expires_at is None
            and entry.version < version
        ):
            entry = await self._revalidate(
                request, readmodel, organization_id, variant, key, version, entry
            )
        elif lean:
            entry = await self._build_miss(
                request, readmodel, organization_id, variant, key, version
            )
        else:
            entry = None
        if entry is None:
            return None
        if_none_match = request.headers.get("if-none-match")
        if if_none_match is not None and not etag_matches(if_none_match, entry.etag):
            return None
        return cached_response(entry, if_none_match)

    async def _build_miss(
        self,
        request: Request,
        readmodel: ReadModel,
        organization_id: uuid.UUID,
        variant: str,
        key: Key,
        version: int,
    ) -> Entry | None:
        build = self.miss
        if build is None:
            return None

        async def built(lean: LeanRequest) -> Entry | None:
            found = await build(lean)
            if found is None:
                return None
            depends = None if self.depends is None else self.depends(lean.resource_id)
            return entry_of(organization_id, version, variant, found[0], found[1], depends)

        return await self._lean_entry(
            request, readmodel, (organization_id, key, variant, version), built
        )

    async def _revalidate(
        self,
        request: Request,
        readmodel: ReadModel,
        organization_id: uuid.UUID,
        variant: str,
        key: Key,
        version: int,
        stale: Entry,
    ) -> Entry | None:
        check = self.revalidate
        if check is None:
            return None

        async def restamp(lean: LeanRequest) -> Entry | None:
            # Changed, or gone: None, and the route builds (or answers 404).
            same = await check(lean) == stale.etag
            return restamped(readmodel, stale, version) if same else None

        return await self._lean_entry(
            request, readmodel, (organization_id, key, variant, version), restamp
        )

    async def _lean_entry(
        self,
        request: Request,
        readmodel: ReadModel,
        wanted: tuple[uuid.UUID, Key, str, int],
        produce: Callable[[LeanRequest], Awaitable[Entry | None]],
    ) -> Entry | None:
        """The entry ``produce`` makes in the lane (a lean miss, a re-stamp) for the
        ``wanted`` (organization, key, variant, version), loaded once for concurrent
        requests of the key; None: the route answers."""
        organization_id, key, variant, version = wanted
        lean = self._lean_request(request, readmodel, organization_id, variant, version)
        if lean is None:
            return None

        async def load() -> Entry:
            try:
                entry = await produce(lean)
            except LeanUnavailable:
                entry = None
            if entry is None:
                raise Declined
            return entry

        return await _lean_load(readmodel, key, version, load)

    def _lean_query(self, request: Request) -> bool:
        """Whether the query string names only parameters the lean builder reads."""
        query = request.scope["query_string"]
        return not query or (bool(self.query) and self.query.issuperset(request.query_params))

    def _query_values(self, request: Request) -> dict[str, Any] | None:
        """``query``'s values as the route's declaration validates them (None: the route
        would refuse one)."""
        if not self.query:
            return {}
        route = request.scope.get("route")
        fields = self._fields.get(id(route))
        if fields is None:
            fields = self._fields[id(route)] = declared_query_fields(route, self.query)
            if len(fields) != len(self.query):
                raise RuntimeError(f"the route declares no query parameter of {self.query}")
        values, errors = request_params_to_args(fields, request.query_params)
        return None if errors or len(values) != len(self.query) else values

    def _lean_request(
        self,
        request: Request,
        readmodel: ReadModel,
        organization_id: uuid.UUID,
        variant: str,
        version: int,
    ) -> LeanRequest | None:
        resource = None
        if self.resource is not None:
            resource = canonical_uuid(str(request.path_params.get(self.resource, "")))
            if resource is None:
                return None
        query = self._query_values(request)
        if query is None:
            return None
        return LeanRequest(
            reader=readmodel.lean,
            memos=readmodel,
            organization_id=organization_id,
            resource_id=resource,
            role=variant,
            version=version,
            query=query,
            request=request,
        )


def declared_query_fields(route: Any, names: frozenset[str]) -> list[Any]:
    """The route's declared query parameters named ``names`` (its dependencies' too)."""
    found: list[Any] = []
    pending = [route.dependant] if route is not None else []
    while pending:
        dependant = pending.pop()
        found += [field for field in dependant.query_params if field.alias in names]
        pending += dependant.dependencies
    return found


async def _lean_load(
    readmodel: ReadModel, key: Key, version: int, build: Callable[[], Awaitable[Entry]]
) -> Entry | None:
    """``ReadModel.load`` of a fast-lane build: ``None`` when it declined (the route
    answers), else the entry, counted as a miss."""
    try:
        entry = await readmodel.load(key, version, build)
    except Declined:
        return None
    readmodel.cache.misses += 1
    return entry

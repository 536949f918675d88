"""The read model's fast path: a cached read answered before routing.

A pure ASGI layer, innermost in the stack (every other middleware — request id, access
log, security headers, rate limits, timeouts — still sees the request). For a ``GET``
with a bearer token it looks up the entry of exactly this request — (organization,
role, path, query string, host) — and, when one is cached at the organization's current
version, sends it (or 304 for a matching ``If-None-Match``) without FastAPI's routing,
dependency solving or a database session. Anything else, including every miss, goes on
to the application unchanged.

It is safe to skip the route's checks because an entry exists only for a request that
the route accepted: the same path and query string were validated, the same role was
authorized in the same organization, and the token is verified here again (the verified
token cache makes that a look-up).

**Lean misses.** For a few URL shapes (``LeanRoute``: ``GET /team/{id}`` and its
overview) a miss is answered here too: one precompiled statement on the driver without
a session or a transaction (``questline.readmodel.lean``), the body built by the same
function the route uses, kept in the cache and sent. The route's rules are applied
first, and anything they would not answer with a plain 200 goes to the route instead:
only a verified token of an organization this process already knows (the route
records new ones), the member or admin role (members' bodies hide e-mails, the builder
is given the role), the id in its canonical form, no query string, no CSV, and the
builder's ``None`` — the team is not in the caller's organization (the route's 404),
the body would be large, or the discipline tree is not built at this version yet.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from questline.auth.tokens import Caller, Role, TokenService, bearer_token
from questline.readmodel.cache import Entry, Key
from questline.readmodel.http import entry_of, etag_matches
from questline.readmodel.lean import LeanRequest, LeanRoute, LeanUnavailable
from questline.readmodel.model import ReadModel
from questline.web.errors import Unauthorized

LEAN_ROLES = (Role.MEMBER, Role.ADMIN)


class _TakeTheRoute(Exception):
    """The lean miss declined: the route answers."""


class ReadModelFastPath:
    def __init__(
        self,
        app: ASGIApp,
        *,
        readmodel: ReadModel,
        tokens: TokenService,
        known_orgs: set[uuid.UUID] | None = None,
        lean_routes: Sequence[LeanRoute] = (),
    ) -> None:
        self.app = app
        self.readmodel = readmodel
        self.tokens = tokens
        self.known_orgs = known_orgs if known_orgs is not None else set()
        self.lean_routes = tuple(lean_routes)

    def _lean_match(self, scope: Scope) -> tuple[LeanRoute, uuid.UUID] | None:
        if scope["query_string"] or not self.readmodel.lean.available:
            return None
        path = scope["path"]
        for route in self.lean_routes:
            resource = route.resource_of(path)
            if resource is not None:
                return route, resource
        return None

    async def _lean_miss(
        self, route: LeanRoute, resource: uuid.UUID, caller: Caller, key: Key, version: int
    ) -> Entry | None:
        org_id = caller.org_id
        if org_id is None or caller.role not in LEAN_ROLES or org_id not in self.known_orgs:
            return None
        role = caller.role.value
        request = LeanRequest(
            reader=self.readmodel.lean,
            memos=self.readmodel,
            organization_id=org_id,
            resource_id=resource,
            role=role,
            version=version,
        )

        async def build() -> Entry:
            try:
                built = await route.build(request)
            except LeanUnavailable:
                built = None
            if built is None:
                raise _TakeTheRoute
            return entry_of(org_id, version, role, built[0], built[1])

        try:
            entry = await self.readmodel.load(key, version, build)
        except _TakeTheRoute:
            return None
        self.readmodel.cache.misses += 1
        return entry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        lean = self._lean_match(scope) if self.lean_routes else None
        if lean is None and not len(self.readmodel.cache):
            await self.app(scope, receive, send)
            return
        token = host = if_none_match = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                token = value
            elif name == b"host":
                host = value
            elif name == b"if-none-match":
                if_none_match = value
            elif name == b"accept" and b"csv" in value.lower():
                token = None  # CSV export (web/csvexport.py): never the cached JSON
                break
        bearer = bearer_token(token)
        if bearer is None:
            await self.app(scope, receive, send)
            return
        try:
            caller = self.tokens.verify(bearer)
        except Unauthorized:
            await self.app(scope, receive, send)
            return
        org_id = caller.org_id
        key = (org_id, caller.role.value, scope["path"], scope["query_string"], host or b"")
        if org_id is None:
            await self.app(scope, receive, send)
            return
        entry = self.readmodel.cache.get(key)  # type: ignore[arg-type]
        if entry is None and lean is None:
            await self.app(scope, receive, send)
            return
        try:
            version = await self.readmodel.version(org_id)
        except Exception:  # the database is unreachable: the route answers (503, retries)
            await self.app(scope, receive, send)
            return
        hit = entry is not None and version == entry.version
        if not hit:
            entry = None
            if lean is not None and version is not None:
                entry = await self._lean_miss(lean[0], lean[1], caller, key, version)  # type: ignore[arg-type]
        if entry is None:
            await self.app(scope, receive, send)
            return
        etag = entry.etag.encode("latin-1")
        matched = if_none_match is not None and etag_matches(
            if_none_match.decode("latin-1"), entry.etag
        )
        if if_none_match is not None and not matched:
            # A validator that does not match may be one the route refuses (too long,
            # malformed): the route decides.
            await self.app(scope, receive, send)
            return
        if hit:
            self.readmodel.cache.hits += 1
        if matched:
            await send(
                {
                    "type": "http.response.start",
                    "status": 304,
                    "headers": [(b"etag", etag)],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        headers = [
            (b"content-length", str(len(entry.body)).encode("latin-1")),
            (b"content-type", b"application/json"),
            (b"etag", etag),
        ]
        headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in entry.headers]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": entry.body})

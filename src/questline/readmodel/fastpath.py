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
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from questline.auth.tokens import TokenService
from questline.readmodel.http import etag_matches
from questline.readmodel.model import ReadModel
from questline.web.errors import Unauthorized


class ReadModelFastPath:
    def __init__(self, app: ASGIApp, *, readmodel: ReadModel, tokens: TokenService) -> None:
        self.app = app
        self.readmodel = readmodel
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not len(self.readmodel.cache):
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
        if token is None or token[:7].lower() != b"bearer ":
            await self.app(scope, receive, send)
            return
        try:
            caller = self.tokens.verify(token[7:].strip().decode("latin-1"))
        except Unauthorized:
            await self.app(scope, receive, send)
            return
        org_id = caller.org_id
        key = (org_id, caller.role.value, scope["path"], scope["query_string"], host or b"")
        entry = self.readmodel.cache.get(key) if org_id is not None else None  # type: ignore[arg-type]
        if entry is None or org_id is None:
            await self.app(scope, receive, send)
            return
        version = await self.readmodel.version(org_id)
        if version != entry.version:
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

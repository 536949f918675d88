"""Rate limits per caller, as ASGI middleware (docs/reliability.md).

A caller is the ``sub`` and ``org`` of a bearer token that verifies (hashed, never the
raw token), else the client address: a forged token counts against its sender's
address, not against a bucket of its own. Each class of route (reads, writes, bulk) has
its own limit. Counters live in memory (one process) or in Redis when
``QUESTLINE_RATE_LIMIT_STORAGE`` names one, so that every process enforces one limit.

Every limited response carries ``RateLimit-Limit``, ``RateLimit-Remaining`` and
``RateLimit-Reset`` (seconds); a refused one is a 429 problem document with
``Retry-After``, except on a route a browser navigates to (single sign-on's login and
callback), whose owner answers the refusal its own way (``BrowserRefusal``: a ``303``
to the dashboard's sign-in page, never JSON in the browser). When the counter store
fails, requests pass (logged): an outage of Redis must not become an outage of the API.
"""

from __future__ import annotations

import enum
import hashlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from limits import RateLimitItem, parse
from limits.aio.storage import Storage
from limits.storage import storage_from_string
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from questline.config import Settings
from questline.web.edge import Edge
from questline.web.error_handlers import problem_from
from questline.web.errors import (
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
)
from questline.web.identity import Caller, scope_bearer
from questline.web.metrics import RATE_LIMITED
from questline.web.send_wrappers import WithRawHeaders

logger = logging.getLogger("questline.web.ratelimit")

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class RouteClass(enum.StrEnum):
    READS = "reads"
    WRITES = "writes"
    BULK = "bulk"
    SCIM = "scim"


def classify(method: str, rules: Edge) -> RouteClass:
    """The class a request is counted in: its route's declaration, else its method."""
    if Edge.DIRECTORY in rules:
        return RouteClass.SCIM
    if Edge.BULK in rules:
        return RouteClass.BULK
    return RouteClass.READS if method in READ_METHODS else RouteClass.WRITES


def storage_uri(configured: str) -> str:
    """``redis://…`` → ``async+redis://…``: the middleware runs on the event loop."""
    return configured if configured.startswith("async+") else f"async+{configured}"


class LocalCounters(Storage):
    """Fixed-window counters in this process's memory (``memory://``), as a ``limits``
    store (its documented extension point) for ``limits``' own strategies.

    ``limits``' asynchronous memory store starts, as a task after each hit, a sweep of
    every counter it holds: a hit's cost grew with the number of callers in the window
    (docs/reliability.md, "Rate limits"). Here a counter past its expiry reads as absent
    at once, and the expired ones are dropped at most once a ``SWEEP_SECONDS``: the
    sweep only bounds the memory."""

    STORAGE_SCHEME = None  # made by ``counter_storage``, not named by a URI
    SWEEP_SECONDS = 1.0

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.clock = clock
        self.counts: dict[str, int] = {}
        self.expiries: dict[str, float] = {}
        self.next_sweep = 0.0

    @property
    def base_exceptions(self) -> type[Exception]:
        return ValueError

    def _count(self, key: str, now: float) -> int:
        expiry = self.expiries.get(key)
        if expiry is None:
            return 0
        if expiry <= now:
            del self.expiries[key]
            self.counts.pop(key, None)
            return 0
        return self.counts[key]

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = self.clock()
        if now >= self.next_sweep:
            self._sweep(now)
        count = self._count(key, now) + amount
        self.counts[key] = count
        if count == amount:
            self.expiries[key] = now + expiry
        return count

    async def get(self, key: str) -> int:
        return self._count(key, self.clock())

    async def get_expiry(self, key: str) -> float:
        return self.expiries.get(key) or self.clock()

    async def check(self) -> bool:
        return True

    async def reset(self) -> int | None:
        cleared = len(self.counts)
        self.counts.clear()
        self.expiries.clear()
        return cleared

    async def clear(self, key: str) -> None:
        self.counts.pop(key, None)
        self.expiries.pop(key, None)

    def _sweep(self, now: float) -> None:
        for key in [key for key, expiry in self.expiries.items() if expiry <= now]:
            del self.expiries[key]
            self.counts.pop(key, None)
        self.next_sweep = now + self.SWEEP_SECONDS


def counter_storage(settings: Settings) -> Storage:
    """Where every rate limit's counters live (``QUESTLINE_RATE_LIMIT_STORAGE``): the
    sign-in link's limits count in the same store, under the same key prefix."""
    if settings.rate_limit_storage.startswith(("memory://", "async+memory://")):
        return LocalCounters()
    uri = storage_uri(settings.rate_limit_storage)
    options: dict[str, float | str | bool] = {}
    if "redis" in uri:
        options = {"implementation": "redispy", "key_prefix": "questline-ratelimit"}
    storage = storage_from_string(uri, **options)
    assert isinstance(storage, Storage), uri
    return storage


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset_seconds: int

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """``headers`` as the raw ASGI pairs a response appends."""
        return [(name.lower().encode(), value.encode()) for name, value in self.headers().items()]


async def window_hit(storage: Storage, item: RateLimitItem, *identifiers: str) -> Verdict:
    """One hit of ``item``'s fixed window for ``identifiers``: ``limits``' rule (allowed
    while the window's count, this hit included, is at most the limit) read from the one
    increment, then the window's end — two calls to the store, where the strategy's
    ``hit`` and ``get_window_stats`` make three (each a round trip to Redis)."""
    key = item.key_for(*identifiers)
    count = await storage.incr(key, item.get_expiry())
    reset = max(1, math.ceil(await storage.get_expiry(key) - time.time()))
    return Verdict(count <= item.amount, item.amount, max(0, item.amount - count), reset)


class RateLimiter:
    """Counts hits per caller and route class in a fixed window (``window_hit``)."""

    def __init__(self, settings: Settings) -> None:
        self.items: dict[RouteClass, RateLimitItem] = {
            RouteClass.READS: parse(settings.rate_limit_reads),
            RouteClass.WRITES: parse(settings.rate_limit_writes),
            RouteClass.BULK: parse(settings.rate_limit_bulk),
            RouteClass.SCIM: parse(settings.rate_limit_scim),
        }
        self.storage = counter_storage(settings)

    async def hit(self, route_class: RouteClass, identity: str) -> Verdict:
        return await window_hit(self.storage, self.items[route_class], route_class.value, identity)


VerifyToken = Callable[[str], Awaitable[Caller]]
"""The caller of a bearer token (``Unauthorized`` when it does not verify)."""


async def caller_identity(scope: Scope, verify: VerifyToken) -> str:
    """A stable, non-secret key for who is calling (see the module docstring)."""
    token = scope_bearer(scope)
    if token is not None:
        try:
            caller = await verify(token)
        except (Unauthorized, ServiceUnavailable):
            pass
        else:
            raw = f"{caller.subject}\0{caller.org_id or '-'}"
            return "token:" + hashlib.sha256(raw.encode()).hexdigest()[:32]
    client = scope.get("client")
    return "addr:" + (client[0] if client else "unknown")


BrowserRefusal = Callable[[Request, Mapping[str, str]], Response | None]
"""The answer to a refused request on a route a browser navigates to (given the
request and the ``Retry-After`` and ``RateLimit-*`` headers), or ``None`` for the
usual problem document. The route's domain supplies it; ``web`` knows none."""


class RateLimitMiddleware:
    """Counts each request against its caller's bucket of its class, and refuses it past
    the limit. Routes declaring ``Edge.NOT_RATE_LIMITED`` go without this step."""

    def __init__(
        self,
        app: ASGIApp,
        rules: Edge = Edge.NONE,
        *,
        limiter: RateLimiter,
        verify: VerifyToken,
        browser_refusal: BrowserRefusal | None = None,
    ) -> None:
        self.app = app
        self.rules = rules
        self.limiter = limiter
        self.verify = verify
        self.browser_refusal = browser_refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Small on purpose: this frame stays for the response's life (an event stream's
        # hours), the verdict's is gone by then (docs/performance.md, "Stream memory").
        await (await self._admitted(scope, receive, send))

    async def _admitted(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """What answers the request: the application (its response given the
        ``RateLimit`` headers) or the refusal."""
        route_class = classify(scope["method"], self.rules)
        try:
            identity = await caller_identity(scope, self.verify)
            verdict = await self.limiter.hit(route_class, identity)
        except Exception as exc:  # the counter store is down: let the request pass
            logger.warning("rate limit store failed; request not limited: %s", type(exc).__name__)
            return self.app(scope, receive, send)
        if not verdict.allowed:
            RATE_LIMITED.labels(route_class.value).inc()
            headers = {**verdict.headers(), "Retry-After": str(verdict.reset_seconds)}
            request = Request(scope)
            if self.browser_refusal is not None:
                answer = self.browser_refusal(request, headers)
                if answer is not None:
                    return answer(scope, receive, send)
            problem = TooManyRequests(
                f"Too many {route_class.value} from this caller; "
                f"retry in {verdict.reset_seconds} s.",
                headers=headers,
            )
            return problem_from(request, problem)(scope, receive, send)
        return self.app(scope, receive, WithRawHeaders(send, verdict.raw_headers()))

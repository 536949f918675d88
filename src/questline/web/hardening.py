"""ASGI middleware that keeps promises under hostile input and slow dependencies.

* ``SecurityHeadersMiddleware``: browser-facing headers on every response, including
  the error responses other middleware write.
* ``json_depth_exceeds``: whether JSON nests deeper than a bound, checked before any
  parser recurses into it (``questline.web.bodies`` calls it on every JSON body).
* ``RequestTimeoutMiddleware``: a request that has not started its answer by the timeout
  is answered 503 and cancelled, so that a stuck lock or query does not hold a client
  forever; a streamed answer is cut off when it stalls for that long.

See docs/reliability.md for the choices.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from questline.web.edge import Edge
from questline.web.error_handlers import problem_from
from questline.web.errors import ServiceUnavailable

logger = logging.getLogger("questline.web.hardening")

API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
"""API responses are data: nothing in them may load, run or be framed."""

BASE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


_ADDED = frozenset(
    {
        *(name.lower().encode("latin-1") for name in BASE_HEADERS),
        b"content-security-policy",
        b"cache-control",
        b"vary",
    }
)
"""Raw names of the headers ``SecurityHeadersMiddleware`` sets or merges."""


class SecurityHeadersMiddleware:
    """Adds ``BASE_HEADERS``, a Content-Security-Policy and, on responses to requests
    that carry credentials, ``Cache-Control: no-store``.

    A response that sets its own Content-Security-Policy (the docs page, which allows
    its inline script by hash) keeps it; ``page_policies`` maps path prefixes to
    policies for whole mounted trees (the dashboard declares its own).

    ``frame_ancestors`` (set by the application: a learning platform's launch) names
    the one origin that may frame a page of those trees for this request; such a page,
    and a response whose own policy allows some frame ancestor, go without
    ``X-Frame-Options: DENY`` (which knows no origin lists).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        page_policies: Mapping[str, str] | None = None,
        frame_ancestors: Callable[[Scope], str | None] | None = None,
    ) -> None:
        self.app = app
        self.page_policies = dict(page_policies or {})
        self.frame_ancestors = frame_ancestors
        self._raw: dict[tuple[str, bool], list[tuple[bytes, bytes]]] = {}

    def _policy_for(self, path: str) -> tuple[str, bool]:
        """The default policy of ``path``, and whether it is a page (of a tree)."""
        for prefix, policy in self.page_policies.items():
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return policy, True
        return API_CSP, False

    def raw_added(self, policy: str, authenticated: bool) -> list[tuple[bytes, bytes]]:
        """The headers this layer adds to a response that has none of them, as raw ASGI
        pairs in the order the ``MutableHeaders`` path writes them (made once per policy)."""
        key = (policy, authenticated)
        found = self._raw.get(key)
        if found is None:
            found = [
                (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in BASE_HEADERS.items()
            ]
            found.append((b"content-security-policy", policy.encode("latin-1")))
            if authenticated:
                found += [(b"cache-control", b"no-store"), (b"vary", b"Authorization")]
            self._raw[key] = found
        return found

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # Not a coroutine: nothing is left to do after the response, and a layer that
        # only hands on keeps no frame for the response's life (an event stream's hours).
        authenticated = any(name == b"authorization" for name, _ in scope["headers"])
        policy, page = self._policy_for(scope["path"])
        framer = self.frame_ancestors(scope) if page and self.frame_ancestors else None
        return self.app(scope, receive, _SecuredSend(self, send, policy, authenticated, framer))


class _SecuredSend:
    """The ``send`` of ``SecurityHeadersMiddleware``: a slotted object, not a closure,
    since it is kept for the response's life (``web/send_wrappers.py`` says why)."""

    __slots__ = ("authenticated", "framer", "layer", "policy", "send")

    def __init__(
        self,
        layer: SecurityHeadersMiddleware,
        send: Send,
        policy: str,
        authenticated: bool,
        framer: str | None,
    ) -> None:
        self.layer = layer
        self.send = send
        self.policy = policy
        self.authenticated = authenticated
        self.framer = framer

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            raw = message.get("headers", ())
            if self.framer is None and not any(name in _ADDED for name, _ in raw):
                # The usual case: none of ours is set yet, so append them in one go rather
                # than scanning the headers once for each (docs/performance.md).
                added = self.layer.raw_added(self.policy, self.authenticated)
                message["headers"] = [*raw, *added]
                await self.send(message)
                return
            headers = MutableHeaders(scope=message)
            for name, value in BASE_HEADERS.items():
                headers[name] = value
            if "content-security-policy" not in headers:
                headers["Content-Security-Policy"] = self.policy
            if self.framer is not None:
                headers["Content-Security-Policy"] = headers["Content-Security-Policy"].replace(
                    "frame-ancestors 'none'", f"frame-ancestors {self.framer}"
                )
            csp = headers["content-security-policy"]
            if "frame-ancestors" in csp and "frame-ancestors 'none'" not in csp:
                del headers["X-Frame-Options"]
            if self.authenticated:
                headers["Cache-Control"] = "no-store"
                headers.add_vary_header("Authorization")
        await self.send(message)


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _outside_strings(body: bytes) -> bytes:
    """The JSON text with its string literals cut out.

    Escaped backslashes, then escaped quotes, are dropped first; every quote left then
    opens or closes a string, so the pieces between them alternate outside/inside.
    """
    unescaped = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    return b"".join(unescaped.split(b'"')[::2])


def json_depth_exceeds(body: bytes, max_depth: int) -> bool:
    """Whether the JSON text nests arrays/objects deeper than ``max_depth``.

    Runs at C speed even on large bulk bodies: strings are cut out, every byte but
    brackets is deleted, then the innermost ``[]``/``{}`` pairs are removed, one level a
    pass, ``max_depth`` times. Pairs still left were deeper. Unbalanced brackets are the
    parser's to report (400 invalid JSON), unless they open more levels than allowed.
    """
    brackets = _outside_strings(body).translate(None, _NOT_BRACKETS)
    for _ in range(max_depth):
        # Mark this level's pairs first, so that "{[]}" loses one level, not two.
        marked = brackets.replace(b"[]", b"\0").replace(b"{}", b"\0")
        if marked == brackets:
            break
        brackets = marked.replace(b"\0", b"")
    if b"[]" in brackets or b"{}" in brackets:
        return True
    return len(brackets) > max_depth


class RequestTimeoutMiddleware:
    """503 problem+json when a request makes no progress for the timeout.

    Until its response starts, the timeout bounds the time to the first byte: at the
    deadline the 503 is sent at once, from a task of its own, and the request is
    cancelled (its transaction rolls back), so that a driver that is slow to cancel
    (SQLite waiting on a lock in a thread) delays the client's answer by nothing. Once
    the response has started, the timeout bounds each wait between two body chunks (the
    app producing the next one or the client taking the last one): a streamed list of a
    million teams runs as long as it keeps sending, and a response that stalls is cut
    off.

    The request runs in its own task, under a timer: no task of its own, no wait on one
    (which cost a hit more than any other step did); the timer is armed once and, for a
    response still sending, moved on only when it fires.
    """

    def __init__(
        self,
        app: ASGIApp,
        rules: Edge = Edge.NONE,
        *,
        seconds: float,
        bulk_seconds: float,
        cancelled: set[asyncio.Future[None]],
    ) -> None:
        self.app = app
        self.timeout = bulk_seconds if Edge.BULK in rules else seconds
        """Routes declaring ``Edge.BULK`` get the bulk timeout; those declaring
        ``Edge.NO_TIMEOUT`` (event streams) go without this step."""
        self.cancelled = cancelled
        """Timed-out requests still winding down (the app waits for them at shutdown)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        deadline = _Deadline(self, scope, receive, send)
        try:
            await self.app(scope, receive, deadline)
        except asyncio.CancelledError:
            if not deadline.cancelled_it():
                raise
        except Exception as exc:
            if not deadline.timed_out:
                raise
            deadline.cancelled_it()
            logger.warning("timed-out request ended with %s", type(exc).__name__)
        else:
            if deadline.timed_out:  # it caught the cancellation itself
                deadline.cancelled_it()
        finally:
            deadline.disarm()
        await deadline.answered()


class _Deadline:
    """The ``send`` of one bounded request, and the timer that watches it: a slotted
    object, not a closure (``web/send_wrappers.py`` says why)."""

    __slots__ = (
        "answer",
        "handle",
        "last",
        "layer",
        "loop",
        "receive",
        "scope",
        "send",
        "started",
        "task",
        "timed_out",
        "unwound",
    )

    def __init__(
        self, layer: RequestTimeoutMiddleware, scope: Scope, receive: Receive, send: Send
    ) -> None:
        self.layer = layer
        self.scope = scope
        self.receive = receive
        self.send = send
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.current_task()
        self.started = False
        self.timed_out = False
        self.answer: asyncio.Task[None] | None = None
        self.unwound: asyncio.Future[None] | None = None
        self.last = self.loop.time()
        """When the request arrived, last sent something, or its send last returned."""
        self.handle: asyncio.TimerHandle | None = self.loop.call_at(
            self.last + layer.timeout, self._expire
        )

    async def __call__(self, message: Message) -> None:
        if self.timed_out:
            return
        if message["type"] == "http.response.start":
            self.started = True
        self.last = self.loop.time()
        await self.send(message)
        self.last = self.loop.time()

    def _expire(self) -> None:
        due = self.last + self.layer.timeout
        if self.started and due > self.loop.time():  # it sent since: wait from then
            self.handle = self.loop.call_at(due, self._expire)
            return
        self.handle = None
        self.timed_out = True
        timeout = self.layer.timeout
        logger.warning("request timed out after %s s", timeout, extra={"path": self.scope["path"]})
        self.unwound = self.loop.create_future()
        self.layer.cancelled.add(self.unwound)
        if not self.started:
            problem = ServiceUnavailable(
                f"The request took longer than {timeout:g} s and was cancelled. Retry it "
                "shortly (a POST with the same Idempotency-Key is safe to retry).",
                headers={"Retry-After": "5"},
            )
            response = problem_from(Request(self.scope), problem)
            self.answer = self.loop.create_task(response(self.scope, self.receive, self.send))
        if self.task is not None:
            self.task.cancel()

    def cancelled_it(self) -> bool:
        """Whether the request's cancellation was this timeout's alone (then it is over)."""
        return self.timed_out and self.task is not None and self.task.uncancel() == 0

    def disarm(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
        if self.unwound is not None:
            self.unwound.set_result(None)
            self.layer.cancelled.discard(self.unwound)

    async def answered(self) -> None:
        """Once the 503 is out (when it was this timeout's to send)."""
        if self.answer is not None:
            await self.answer


async def drain(cancelled: set[asyncio.Future[None]], grace: float) -> bool:
    """Wait until timed-out requests have rolled back; whether all of them did in time."""
    if not cancelled:
        return True
    _, pending = await asyncio.wait(set(cancelled), timeout=grace)
    return not pending


ShutdownStep = tuple[str, Callable[[], Awaitable[object]]]
"""A name for the log and the work of one step of the application's shutdown."""


async def run_shutdown(steps: Sequence[ShutdownStep], grace: float) -> list[str]:
    """Run each step in turn for at most ``grace`` seconds; the names of those that did
    not finish in time (each logged). A step that hangs (a dispatcher that does not stop,
    a write that waits for a lock) must not keep the process, or a test's event loop,
    from ever finishing its shutdown; the steps after it still run."""
    late: list[str] = []
    for name, step in steps:
        try:
            async with asyncio.timeout(grace):
                await step()
        except TimeoutError:
            logger.warning("shutdown: %s did not finish within %s s; going on", name, grace)
            late.append(name)
        except Exception:
            logger.exception("shutdown: %s failed; going on", name)
    return late

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

    The request runs in its own task. Until its response starts, the timeout bounds the
    time to the first byte: at the deadline the client gets its 503 at once and the task
    is cancelled (its transaction rolls back) in the background, so that a driver that
    is slow to cancel (SQLite waiting on a lock in a thread) delays nobody. Once the
    response has started, the timeout bounds each wait between two body chunks (the
    app producing the next one or the client taking the last one): a streamed list of a
    million teams runs as long as it keeps sending, and a response that stalls is cut
    off.
    """

    def __init__(
        self,
        app: ASGIApp,
        rules: Edge = Edge.NONE,
        *,
        seconds: float,
        bulk_seconds: float,
        cancelled: set[asyncio.Task[None]],
    ) -> None:
        self.app = app
        self.timeout = bulk_seconds if Edge.BULK in rules else seconds
        """Routes declaring ``Edge.BULK`` get the bulk timeout; those declaring
        ``Edge.NO_TIMEOUT`` (event streams) go without this step."""
        self.cancelled = cancelled
        """Timed-out requests still winding down (the app waits for them at shutdown)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        timeout = self.timeout
        loop = asyncio.get_running_loop()
        progress = _Progress(loop.time())

        async def guarded_send(message: Message) -> None:
            if progress.timed_out:
                return
            if message["type"] == "http.response.start":
                progress.started = True
            progress.last = loop.time()
            await send(message)
            progress.last = loop.time()

        task = asyncio.ensure_future(self.app(scope, receive, guarded_send))
        try:
            done = await _wait_while_progressing(task, progress, timeout, loop)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if done:
            task.result()
            return
        progress.timed_out = True
        task.cancel()
        self.cancelled.add(task)
        task.add_done_callback(self._forget)
        logger.warning("request timed out after %s s", timeout, extra={"path": scope["path"]})
        if progress.started:
            return
        problem = ServiceUnavailable(
            f"The request took longer than {timeout:g} s and was cancelled. Retry it "
            "shortly (a POST with the same Idempotency-Key is safe to retry).",
            headers={"Retry-After": "5"},
        )
        await problem_from(Request(scope), problem)(scope, receive, send)

    def _forget(self, task: asyncio.Task[None]) -> None:
        self.cancelled.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("timed-out request ended with %s", type(task.exception()).__name__)


class _Progress:
    """How far one bounded request has got (written by its ``send``)."""

    __slots__ = ("last", "started", "timed_out")

    def __init__(self, now: float) -> None:
        self.last = now
        """When the request last sent something, or its send last returned."""
        self.started = False
        self.timed_out = False


async def _wait_while_progressing(
    task: asyncio.Task[None], progress: _Progress, seconds: float, loop: asyncio.AbstractEventLoop
) -> bool:
    """Whether ``task`` finished before ``seconds`` passed without progress: before its
    response starts, from the request's arrival; after, from its last chunk."""
    deadline = loop.time() + seconds
    while True:
        done, _ = await asyncio.wait({task}, timeout=max(deadline - loop.time(), 0))
        if done:
            return True
        if not progress.started:
            return False
        deadline = progress.last + seconds
        if deadline <= loop.time():
            return False


async def drain(cancelled: set[asyncio.Task[None]], grace: float) -> bool:
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

"""``HEAD`` wherever ``GET`` is answered (RFC 9110 §9.3.2): the same status and headers,
no body.

The request goes through as a ``GET`` (so every ``GET`` route, mounted files and the
API alike, answers it with the same checks: authentication, ETags, 304s), and the
response body is dropped. The response is complete as soon as its headers are out, so a
stream (an event stream) ends there instead of running for a client that reads nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGetMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["method"] != "HEAD":
            return self.app(scope, receive, send)  # a pass-through keeps no frame
        return self._as_get(scope, receive, send)

    async def _as_get(self, scope: Scope, receive: Receive, send: Send) -> None:
        done = False

        async def send_without_body(message: Message) -> None:
            nonlocal done
            if done:
                return
            if message["type"] == "http.response.start":
                await send(message)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                done = True
                return
            await send(message)

        as_get = {**scope, "method": "GET"}
        try:
            await self.app(as_get, receive, send_without_body)
        finally:
            if "route" in as_get:  # the access log and /metrics name the route
                scope["route"] = as_get["route"]

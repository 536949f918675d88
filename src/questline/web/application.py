"""The application class: FastAPI, with the framework's per-request layers next to the
router, and one frame where FastAPI and Starlette keep two.

FastAPI wraps every request, outside the application's own middleware, in five awaiting
layers: its ``__call__``, Starlette's, the server-error handler, the exception telemetry
and the body-size limit. Each keeps a coroutine frame for as long as the response lasts;
for an open event stream (hours) three of them were ~1.1 KiB of the 20 KB a stream may
cost (docs/performance.md, "Stream memory"). Here the server-error handler stays
outermost — the last resort for a failure in the middleware itself — and the other
layers FastAPI builds, whichever they are, sit inside the middleware, just above the
router: a request the fast lane answers (every read-model hit, every stream) never
enters them, and a routed request passes them in the same order as before relative to
the router.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from questline.web.internals import native_telemetry_enabled


class Application(FastAPI):
    def build_middleware_stack(self) -> ASGIApp:
        # FastAPI's own list, built without the application's middleware: the server-error
        # handler around its layers around the router. The middleware goes in between.
        declared, self.user_middleware = self.user_middleware, []
        try:
            outermost = super().build_middleware_stack()
        finally:
            self.user_middleware = declared
        if not isinstance(outermost, ServerErrorMiddleware):  # pragma: no cover - FastAPI's
            raise TypeError(f"FastAPI's outermost layer is {type(outermost).__name__}")
        app = outermost.app
        for cls, args, kwargs in reversed(declared):
            app = cls(app, *args, **kwargs)
        outermost.app = app
        return outermost

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A coroutine still (servers tell ASGI 3 from ASGI 2 by that), but one frame where
        # FastAPI's and Starlette's ``__call__`` keep two.
        if scope["type"] != "http" or self.root_path or native_telemetry_enabled(self):
            # Lifespan, a root path, OpenTelemetry's request span: FastAPI's own way.
            await super().__call__(scope, receive, send)
            return
        if self.middleware_stack is None:
            self.middleware_stack = self.build_middleware_stack()
        scope["app"] = self
        await self.middleware_stack(scope, receive, send)

"""The host names this server serves: 400 for any other ``Host``
(``AllowedHostsMiddleware``, when ``QUESTLINE_ALLOWED_HOSTS`` is set)."""

from __future__ import annotations

from collections.abc import Awaitable

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from questline.web.error_handlers import problem_from
from questline.web.errors import BadRequest


class AllowedHostsMiddleware:
    """400 for a ``Host`` not in ``QUESTLINE_ALLOWED_HOSTS`` (when that is set), on every
    route but those declaring ``Edge.ANY_HOST`` (the probes: a load balancer's health
    check names no host of the service), which go without this step."""

    def __init__(self, app: ASGIApp, *, hosts: list[str]) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        host = ""
        for name, value in scope["headers"]:
            if name == b"host":
                host = value.decode("latin-1").lower()
                break
        name_only = host if host.endswith("]") else host.rsplit(":", 1)[0]
        if host not in self.hosts and name_only not in self.hosts:
            problem = BadRequest("This server does not serve that host name.")
            return problem_from(Request(scope), problem)(scope, receive, send)
        return self.app(scope, receive, send)

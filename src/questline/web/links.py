"""Every link the service emits, built one way: on ``QUESTLINE_PUBLIC_URL``, or relative.

``Location`` (RFC 9110 §10.2.2) and ``Link`` (RFC 8288 §3.1) may carry a relative
reference, which the client resolves against the address it sent the request to: a
server reached on any port, behind any proxy or container mapping, hands out links that
reach it. When the operator names the public address, links are absolute on it. The
``Host`` header is never used: any client can set it.

The routes (``web.routing.url_of``, ``web.pagination``), the fast lane's early answers
(``progress.early_write``, through ``url_of``), the leaderboard's pages and the
problem types (``web.errors.problem_type_base``) all build their links here.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import Request


def link_on(public_url: str | None, path: str, query: dict[str, str] | None = None) -> str:
    """``path`` (absolute path, starting with ``/``) and ``query`` as a link of this
    service: absolute on ``public_url`` when given, else an absolute-path reference."""
    return (public_url or "").rstrip("/") + path + (f"?{urlencode(query)}" if query else "")


def service_link(request: Request, path: str, query: dict[str, str] | None = None) -> str:
    """A link to ``path`` of this service, for an answer to ``request``."""
    from questline.web.state import app_state

    return link_on(app_state(request).settings.public_url, path, query)

"""How ``questline serve`` configures its server: ``uvicorn_options`` (the protocol
that checks the request head, ``questline.web.server_protocol``, and the limits of
``ServerLimits``), and ``granian_options``, what granian offers for the same limits.
"""

from __future__ import annotations

from typing import Any

from questline.config import Settings
from questline.web.server_limits import ServerLimits
from questline.web.server_protocol import PROTOCOL_PATH


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


WORKER_HEALTHCHECK_SECONDS = 60
"""How long a worker process may leave uvicorn's health ping unanswered (``workers`` > 1)."""


def uvicorn_options(settings: Settings, *, host: str, port: int, workers: int) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run`` for ``questline serve``."""
    limits = ServerLimits.from_settings(settings)
    proxies = _split(settings.trusted_proxies)
    return {
        "app": "questline.app:create_served_app",
        "factory": True,
        "host": host,
        "port": port,
        "workers": workers,
        "access_log": False,
        "log_config": None,
        "http": PROTOCOL_PATH,
        "server_header": False,
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": proxies or [],
        "timeout_keep_alive": limits.keep_alive_seconds,
        # Open event streams never finish by themselves: cut them on shutdown.
        "timeout_graceful_shutdown": settings.shutdown_grace_seconds,
        # uvicorn's own cap counts connections and running requests together; ours are
        # finer (the protocol counts connections, the middleware requests), this is a
        # backstop above both.
        "limit_concurrency": limits.max_connections + limits.max_concurrent_requests,
        # Only used if someone switches to the h11 parser: bounds its buffer.
        "h11_max_incomplete_event_size": limits.max_header_bytes,
        # With workers, uvicorn kills a worker that leaves a ping unanswered this long and
        # starts another. Its default, 5 s, is shorter than a worker's start (imports,
        # the first connections) on a busy machine, where every new worker would then be
        # killed before it served, forever.
        "timeout_worker_healthcheck": WORKER_HEALTHCHECK_SECONDS,
    }


def granian_options(settings: Settings) -> dict[str, Any]:
    """What granian offers for the same limits (for a deployment that serves with it).

    granian (``HTTP1Settings``) has a header-read timeout and a read-buffer bound (which
    caps the head as a whole, not per line, and answers by closing, not 431), and
    ``backpressure`` (requests per worker; excess waits in the accept queue rather than
    getting a 503). It has no request-line, query or connection cap: those stay with
    the application or a proxy in front. The body deadline and the fast 503 are
    application middleware and hold under any server.
    """
    limits = ServerLimits.from_settings(settings)
    return {
        "http1_settings": {
            "header_read_timeout": int(limits.header_timeout_seconds * 1000),
            "keep_alive": True,
            "max_buffer_size": limits.max_header_bytes,
        },
        "backpressure": limits.max_concurrent_requests,
    }

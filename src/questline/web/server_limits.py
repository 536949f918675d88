"""The limits a request meets at the server boundary, before the application sees it
(``ServerLimits``): read from the ``QUESTLINE_SERVER_*`` settings, so they live in one
place whichever server runs the application (docs/reliability.md, "Limits at the
server boundary").
"""

from __future__ import annotations

from dataclasses import dataclass

from questline.config import Settings
from questline.web.errors import problem_type_base


@dataclass(frozen=True, slots=True)
class ServerLimits:
    max_request_line_bytes: int
    max_query_bytes: int
    max_header_line_bytes: int
    max_header_bytes: int
    header_timeout_seconds: float
    body_timeout_seconds: float
    max_connections: int
    max_concurrent_requests: int
    keep_alive_seconds: int
    problem_type_base: str = "/problems/"
    """The base of the refusals' problem types: the application's (``problem_type_base``)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerLimits:
        return cls(
            max_request_line_bytes=settings.server_max_request_line_bytes,
            max_query_bytes=settings.server_max_query_bytes,
            max_header_line_bytes=settings.server_max_header_line_bytes,
            max_header_bytes=settings.server_max_header_bytes,
            header_timeout_seconds=settings.server_header_timeout_seconds,
            body_timeout_seconds=settings.server_body_timeout_seconds,
            max_connections=settings.server_max_connections,
            max_concurrent_requests=settings.server_max_concurrent_requests,
            keep_alive_seconds=settings.keep_alive_seconds,
            problem_type_base=problem_type_base(settings.public_url),
        )

"""JSON logs carrying the request id (``X-Request-Id``)."""

from __future__ import annotations

import logging
import sys
from typing import IO

from asgi_correlation_id import CorrelationIdFilter
from pythonjsonlogger.json import JsonFormatter


def configure_logging(level: str = "INFO", fmt: str = "json") -> None:
    root = logging.getLogger()
    root.handlers[:] = [make_handler(fmt)]
    root.setLevel(level.upper())
    for noisy in ("uvicorn.access",):
        logging.getLogger(noisy).disabled = True


def make_handler(fmt: str = "json", stream: IO[str] | None = None) -> logging.Handler:
    """The handler ``serve`` logs through (tests attach one to read what it writes)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(CorrelationIdFilter(name="request_id", uuid_length=32, default_value="-"))
    if fmt == "json":
        handler.setFormatter(
            JsonFormatter(
                "%(asctime)s %(levelname)s %(name)s %(message)s %(correlation_id)s",
                rename_fields={"correlation_id": "request_id", "levelname": "level"},
            )
        )
    else:
        handler.setFormatter(
            logging.Formatter(
                "%(asctime)s %(levelname)s [%(correlation_id)s] %(name)s: %(message)s"
            )
        )
    return handler

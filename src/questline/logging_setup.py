"""JSON logs carrying the request id (``X-Request-Id``)."""

from __future__ import annotations

import logging
import sys

from asgi_correlation_id import CorrelationIdFilter
from pythonjsonlogger.json import JsonFormatter


def configure_logging(level: str = "INFO", fmt: str = "json") -> None:
    handler = logging.StreamHandler(sys.stderr)
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
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("uvicorn.access",):
        logging.getLogger(noisy).disabled = True

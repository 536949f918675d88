"""Logs carrying the request id (``X-Request-Id``): human-readable lines on a terminal,
JSON lines otherwise (``QUESTLINE_LOG_FORMAT=text|json`` overrides the guess)."""

from __future__ import annotations

import logging
import sys
from typing import IO, Any

from asgi_correlation_id import CorrelationIdFilter
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

QUIET_UNLESS_DEBUG = ("alembic",)
"""Loggers whose INFO lines (one per migration, "Context impl …") only show at DEBUG."""

_STANDARD_ATTRS = frozenset(
    logging.LogRecord("x", 0, "x", 0, "x", None, None).__dict__.keys()
    | {"message", "asctime", "correlation_id", "color_message", "taskName"}
)


def resolve_format(fmt: str = "auto", stream: IO[str] | None = None) -> str:
    """``auto``: ``text`` when the stream is a terminal, else ``json``."""
    if fmt in ("json", "text"):
        return fmt
    stream = stream or sys.stderr
    isatty = getattr(stream, "isatty", None)
    return "text" if callable(isatty) and isatty() else "json"


def configure_logging(level: str = "INFO", fmt: str = "auto") -> None:
    root = logging.getLogger()
    root.handlers[:] = [make_handler(fmt)]
    root.setLevel(level.upper())
    quiet_migrations(verbose=level.upper() == "DEBUG")
    for noisy in ("uvicorn.access",):
        logging.getLogger(noisy).disabled = True


def quiet_migrations(*, verbose: bool = False) -> None:
    """Alembic's per-migration INFO lines are noise on every start; DEBUG shows them."""
    for name in QUIET_UNLESS_DEBUG:
        logging.getLogger(name).setLevel(logging.NOTSET if verbose else logging.WARNING)


class TextFormatter(logging.Formatter):
    """``14:02:03 INFO  questline.access [3f2a…] GET /team 200 (duration_ms=3.1)``."""

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)-5s %(name)s [%(correlation_id)s] %(message)s",
            datefmt="%H:%M:%S",
        )

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = _extras(record)
        if extras:
            line += " (" + ", ".join(f"{k}={v}" for k, v in extras.items()) + ")"
        return line


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    skip = {"method", "route", "status"}  # already in an access line's message
    return {
        k: v
        for k, v in record.__dict__.items()
        if k not in _STANDARD_ATTRS and k not in skip and not k.startswith("_")
    }


def make_handler(fmt: str = "auto", stream: IO[str] | None = None) -> logging.Handler:
    """The handler ``serve`` logs through (tests attach one to read what it writes)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(CorrelationIdFilter(name="request_id", uuid_length=32, default_value="-"))
    if resolve_format(fmt, handler.stream) == "json":
        handler.setFormatter(
            JsonFormatter(
                "%(asctime)s %(levelname)s %(name)s %(message)s %(correlation_id)s",
                rename_fields={"correlation_id": "request_id", "levelname": "level"},
                reserved_attrs=[*RESERVED_ATTRS, "color_message"],  # uvicorn's ANSI copy
            )
        )
    else:
        handler.setFormatter(TextFormatter())
    return handler

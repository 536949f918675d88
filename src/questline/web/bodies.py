"""JSON request bodies at the boundary: depth, NUL characters, and large bodies parsed and
validated off the event loop.

Every JSON body a route reads passes ``check_json_body`` once, on the raw bytes, before
any parser sees it: nesting deeper than ``QUESTLINE_MAX_JSON_DEPTH`` is 400, a NUL
character anywhere (a raw byte or a ``\\u0000`` escape, in a key or a value) is 422
naming the fields that hold one (PostgreSQL cannot store NUL in text, and no field of
the API has a use for it).

Bodies larger than ``LARGE_BODY_BYTES`` (a discipline document may be 5 MiB) are then
parsed and validated against the route's body model in a worker thread, with the
cyclic garbage collector paused (``without_gc_pauses``): validating a large document
is long CPU work, and full collections over its many fresh objects hold the GIL, and
so stall every other request, for long stretches (figures: docs/reliability.md).
FastAPI is handed the validated model (it does not validate an instance of the model
again), so nothing of it runs on the loop. Smaller bodies are cheap enough to check
and parse on the loop.
"""

from __future__ import annotations

import contextlib
import gc
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import anyio
from fastapi import Request
from fastapi.routing import APIRoute

from questline.web.errors import (
    MAX_LISTED_ERRORS,
    BadRequest,
    FieldError,
    Unprocessable,
    field_path,
    validation_problem,
)
from questline.web.hardening import json_depth_exceeds
from questline.web.internals import body_is_embedded, keep_parsed_json
from questline.web.state import app_state

T = TypeVar("T")

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})

LARGE_BODY_BYTES = 64 * 1024
"""Bodies up to this size are checked, parsed and validated on the event loop (cheaper
than a hand-off to a thread); larger ones in a worker thread."""

_NUL_ESCAPE = b"\\u0000"

_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_paused_since = 0.0
GC_PAUSE_MAX_SECONDS = 10.0
"""Overlapping callers (bulk requests, large documents) could keep the collector paused
indefinitely; past this long, the caller that ends runs one full collection itself
(cycles are still freed)."""


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused meanwhile (process-wide, counted, so that
    overlapping callers, in threads or on the loop, resume it when the last is done).

    Parsing, validating and writing a large document or a bulk request makes hundreds of
    thousands of short-lived, acyclic objects (freed by reference counting); the
    collections they trigger walk all of them holding the GIL, which stalls the event
    loop's thread however the work itself is split (figures: docs/bulk.md)."""
    global _gc_pausers, _gc_paused_since
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_paused_since = time.monotonic()
        _gc_pausers += 1
        gc.disable()
    try:
        yield
    finally:
        overdue = False
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0:
                gc.enable()
            elif time.monotonic() - _gc_paused_since > GC_PAUSE_MAX_SECONDS:
                _gc_paused_since = time.monotonic()
                overdue = True
        if overdue:
            gc.collect()


def without_gc_pauses(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` with the cyclic garbage collector paused (``gc_paused``)."""
    with gc_paused():
        return work(*args)


def is_json_request(request: Request) -> bool:
    return is_json_media(request.headers.get("content-type", ""))


def is_json_media(content_type: str) -> bool:
    """``application/json`` or any ``…+json`` media type, parameters aside."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def holds_nul(body: bytes) -> bool:
    """Whether the JSON text has a NUL character: a raw byte or a ``\\u0000`` escape
    (an escaped backslash followed by ``u0000`` is text, not NUL). C speed."""
    if b"\x00" in body:
        return True
    if _NUL_ESCAPE not in body:
        return False
    return _NUL_ESCAPE in body.replace(b"\\\\", b"")


def nul_fields(document: Any) -> list[str]:
    """The paths (``Levels[1].Title``) of the strings, keys included, holding a NUL."""
    found: list[str] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), document)]
    while stack and len(found) <= MAX_LISTED_ERRORS:
        path, value = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                found.append(field_path(path))
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                if "\x00" in key:
                    found.append(field_path((*path, key.replace("\x00", "\\u0000"))))
                else:
                    stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack.extend(((*path, i), item) for i, item in reversed(list(enumerate(value))))
    return found


def _refuse_nul(body: bytes) -> None:
    try:
        # strict=False: a raw NUL inside a string parses, so its field can be named.
        fields = nul_fields(json.loads(body, strict=False))
    except ValueError:
        fields = []
    errors = [
        FieldError(field=field, message="NUL characters are not accepted in any field.")
        for field in fields or ["body"]
    ]
    raise Unprocessable(
        "The body holds a NUL character (U+0000); no field accepts one.", errors=errors
    )


def check_json_text(body: bytes, max_depth: int) -> None:
    """400 for nesting deeper than ``max_depth``, 422 for a NUL character."""
    if json_depth_exceeds(body, max_depth):
        raise BadRequest(f"The JSON body is nested deeper than {max_depth} levels.")
    if holds_nul(body):
        _refuse_nul(body)


def parse_and_validate(body: bytes, max_depth: int, route: APIRoute | None) -> Any:
    """Check, parse and validate ``body`` against the route's one plain body model: the
    value FastAPI then uses as the parsed body (an instance it does not validate
    again). Raises the problem the same body would get on the loop. A route without
    such a model (``POST /team/bulk`` parses its own body, in its own thread) only gets
    the checks, and ``None``."""
    check_json_text(body, max_depth)
    field = single_body_field(route)
    if field is None:
        return None
    try:
        document = json.loads(body)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"The body is not valid JSON: {exc.msg}.") from None
    value, errors = field.validate(document, {}, loc=("body",))
    if errors:
        raise validation_problem(errors)
    return value


def single_body_field(route: APIRoute | None) -> Any:
    """The body model of a route with one, not embedded, body parameter (else None)."""
    if route is None or route.body_field is None:
        return None
    params = route.dependant.body_params
    if len(params) != 1 or body_is_embedded(params):
        return None
    return route.body_field


async def read_checked_body(
    request: Request, *, max_depth: int, route: APIRoute | None = None
) -> None:
    """Read the body (bounded by the body guard's ``receive``) and check it; a large JSON
    body is also parsed and validated here, in a worker thread. The body (and the parsed
    value) stay on the request, so FastAPI and the idempotency check reuse them."""
    if request.method not in BODY_METHODS:
        return
    body = await request.body()
    if not body or not is_json_request(request):
        return
    if len(body) <= LARGE_BODY_BYTES:
        check_json_text(body, max_depth)
        return
    parsed = await anyio.to_thread.run_sync(
        without_gc_pauses, parse_and_validate, body, max_depth, route
    )
    if parsed is not None:
        keep_parsed_json(request, parsed)


class CheckedBodyRoute(APIRoute):
    """For routes outside ``TransactionalRoute`` (nothing to authorize first): the same
    body checks and off-loop parsing."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        original = super().get_route_handler()

        async def handler(request: Request) -> Any:
            max_depth = app_state(request).settings.max_json_depth
            await read_checked_body(request, max_depth=max_depth, route=self)
            return await original(request)

        return handler

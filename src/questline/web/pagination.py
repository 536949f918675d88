"""Opt-in keyset paging (DESIGN §2): ``limit`` and an opaque ``after`` cursor.

Lists stay JSON arrays; the next page is announced in an RFC 8288 ``Link`` header.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, TypeVarTuple

from fastapi import Depends, Query, Request, Response
from sqlalchemy import ColumnElement, Select, and_, or_
from sqlalchemy.orm import QueryableAttribute

from questline.web.errors import Unprocessable
from questline.web.links import service_link

MAX_LIMIT = 1000
T = TypeVar("T")
Ts = TypeVarTuple("Ts")


@dataclass(frozen=True, slots=True)
class PageRequest:
    limit: int | None
    after: list[Any] | None

    @property
    def fetch_size(self) -> int | None:
        """One row more than asked, to learn whether a next page exists."""
        return None if self.limit is None else self.limit + 1


def cursor_parts(values: list[Any], *converters: Any) -> tuple[Any, ...]:
    """Convert a decoded cursor's values, e.g. ``cursor_parts(v, str, uuid.UUID)``."""
    if len(values) != len(converters):
        raise Unprocessable(NOT_ISSUED)
    try:
        return tuple(convert(value) for convert, value in zip(converters, values, strict=True))
    except (TypeError, ValueError) as exc:
        raise Unprocessable(NOT_ISSUED) from exc


Key = tuple[QueryableAttribute[Any], Callable[[Any], Any]]
"""A keyset column and how its cursor value is read back (``uuid.UUID``,
``dt.datetime.fromisoformat``): the columns in sort order, the last one unique."""


def time_then_id(
    at: QueryableAttribute[dt.datetime], row_id: QueryableAttribute[uuid.UUID]
) -> tuple[Key, Key]:
    """The keys of a list in time order, its id breaking ties: the cursor is
    ``[at.isoformat(), str(row_id)]``."""
    return (at, dt.datetime.fromisoformat), (row_id, uuid.UUID)


def keyset_page(
    query: Select[*Ts], page: PageRequest, *keys: Key, descending: bool = False
) -> Select[*Ts]:
    """``query`` as one keyset page: the rows after the cursor's, in the keys' order,
    one more than ``limit`` (to learn whether a next page exists)."""
    columns = [column for column, _ in keys]
    if page.after is not None:
        values = cursor_parts(page.after, *(convert for _, convert in keys))
        query = query.where(_beyond(columns, values, descending))
    query = query.order_by(*(column.desc() if descending else column for column in columns))
    if page.fetch_size is not None:
        query = query.limit(page.fetch_size)
    return query


def _beyond(
    columns: Sequence[QueryableAttribute[Any]], values: Sequence[Any], descending: bool
) -> ColumnElement[bool]:
    """After ``values`` in the order: past the first key, or equal on it and past on
    the rest."""
    first, value = columns[0], values[0]
    past: ColumnElement[bool] = first < value if descending else first > value
    if len(columns) == 1:
        return past
    return or_(past, and_(first == value, _beyond(columns[1:], values[1:], descending)))


NOT_ISSUED = "The 'after' cursor is not one this service issued; use a Link header's."
MAC_BYTES = 12


def _cursor_key(request: Request) -> bytes:
    """A key derived from the service's signing secret: every worker and restart agrees."""
    key: bytes | None = getattr(request.app.state, "questline_cursor_key", None)
    if key is None:
        from questline.web.state import app_state

        secret = app_state(request).signing_secret()
        key = hmac.new(secret.encode(), b"questline paging cursor v1", hashlib.sha256).digest()
        request.app.state.questline_cursor_key = key
    return key


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def encode_cursor(values: list[Any], key: bytes) -> str:
    """``payload.mac``: the key values as JSON, and an HMAC over them (opaque, tamper-proof)."""
    raw = json.dumps(values, separators=(",", ":"), default=str).encode()
    mac = hmac.new(key, raw, hashlib.sha256).digest()[:MAC_BYTES]
    return f"{_b64(raw)}.{_b64(mac)}"


def decode_cursor(cursor: str, key: bytes) -> list[Any]:
    """The values of a cursor this service issued; 422 for anything else."""
    payload, _, mac = cursor.partition(".")
    try:
        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        given = base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4))
    except (ValueError, UnicodeEncodeError) as exc:
        raise Unprocessable(NOT_ISSUED) from exc
    expected = hmac.new(key, raw, hashlib.sha256).digest()[:MAC_BYTES]
    if not hmac.compare_digest(given, expected):
        raise Unprocessable(NOT_ISSUED)
    try:
        values = json.loads(raw)
    except ValueError as exc:  # pragma: no cover - we signed it, so we wrote it
        raise Unprocessable(NOT_ISSUED) from exc
    if not isinstance(values, list):
        raise Unprocessable(NOT_ISSUED)
    return values


CURSOR_DESCRIPTION = "Cursor from the previous page's `Link` header (opaque, signed)."
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"


After = Annotated[
    str | None, Query(max_length=512, pattern=CURSOR_PATTERN, description=CURSOR_DESCRIPTION)
]
"""The ``after`` query parameter of every paged list."""


def _page(request: Request, limit: int | None, after: str | None) -> PageRequest:
    return PageRequest(
        limit=limit, after=decode_cursor(after, _cursor_key(request)) if after else None
    )


async def page_request(
    request: Request,
    limit: Annotated[
        int | None, Query(ge=1, le=MAX_LIMIT, description="Page size; omit for every item.")
    ] = None,
    after: After = None,
) -> PageRequest:
    """Opt-in paging: without ``limit``, every item (after the cursor, if one is given)."""
    return _page(request, limit, after)


PageDep = Annotated[PageRequest, Depends(page_request)]

DEFAULT_PAGE_SIZE = 100


async def bounded_page_request(
    request: Request,
    limit: Annotated[
        int,
        Query(
            ge=1,
            le=MAX_LIMIT,
            description=f"Page size (default {DEFAULT_PAGE_SIZE}, at most {MAX_LIMIT}); "
            "the next page is in the `Link` header.",
        ),
    ] = DEFAULT_PAGE_SIZE,
    after: After = None,
) -> PageRequest:
    """Always paged: lists outside the seed's contract never answer with every row."""
    return _page(request, limit, after)


BoundedPageDep = Annotated[PageRequest, Depends(bounded_page_request)]


def announce_next_page(
    request: Request, response: Response, page: PageRequest, last_key: list[Any] | None
) -> None:
    """Set ``Link: <…?limit=n&after=…>; rel="next"`` when there is a next page.

    The link is a relative reference, or absolute on ``QUESTLINE_PUBLIC_URL`` when that
    is set (``questline.web.links``), never built on the request's ``Host`` header."""
    if page.limit is None or last_key is None:
        return
    query = dict(request.query_params)
    query.update(limit=str(page.limit), after=encode_cursor(last_key, _cursor_key(request)))
    url = service_link(request, request.url.path, query)
    response.headers["Link"] = f'<{url}>; rel="next"'


def split_page(rows: list[T], page: PageRequest) -> tuple[list[T], bool]:
    """The rows of this page and whether more follow."""
    if page.limit is None or len(rows) <= page.limit:
        return rows, False
    return rows[: page.limit], True


@dataclass(frozen=True, slots=True)
class Paging:
    """A paged list's request: the page asked for, and the request and response that
    announce the next one. A route takes this instead of its request, response and page,
    and ``rows`` cuts the page and writes its ``Link`` in one step."""

    request: Request
    response: Response
    page: PageRequest

    def rows(self, fetched: Sequence[T], key: Callable[[T], list[Any]]) -> list[T]:
        """This page of ``fetched`` (read with one row more than asked: ``fetch_size``),
        and the next page announced from the ``key`` of its last row when more follow."""
        rows, more = split_page(list(fetched), self.page)
        announce_next_page(self.request, self.response, self.page, key(rows[-1]) if more else None)
        return rows


async def paging(request: Request, response: Response, page: PageDep) -> Paging:
    """``PageDep`` (opt-in paging), with what announces the next page."""
    return Paging(request, response, page)


async def bounded_paging(request: Request, response: Response, page: BoundedPageDep) -> Paging:
    """``BoundedPageDep`` (always paged), with what announces the next page."""
    return Paging(request, response, page)


PagingDep = Annotated[Paging, Depends(paging)]
BoundedPagingDep = Annotated[Paging, Depends(bounded_paging)]

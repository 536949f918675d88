"""Opt-in keyset paging (DESIGN §2): ``limit`` and an opaque ``after`` cursor.

Lists stay JSON arrays; the next page is announced in an RFC 8288 ``Link`` header.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Query, Request, Response

from questline.web.errors import Unprocessable

MAX_LIMIT = 1000
T = TypeVar("T")


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
        raise Unprocessable("The 'after' cursor is not one this service issued.")
    try:
        return tuple(convert(value) for convert, value in zip(converters, values, strict=True))
    except (TypeError, ValueError) as exc:
        raise Unprocessable("The 'after' cursor is not one this service issued.") from exc


def encode_cursor(values: list[Any]) -> str:
    raw = json.dumps(values, separators=(",", ":"), default=str).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> list[Any]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError) as exc:
        raise Unprocessable("The 'after' cursor is not one this service issued.") from exc
    if not isinstance(values, list):
        raise Unprocessable("The 'after' cursor is not one this service issued.")
    return values


async def page_request(
    limit: Annotated[
        int | None, Query(ge=1, le=MAX_LIMIT, description="Page size; omit for every item.")
    ] = None,
    after: Annotated[
        str | None, Query(max_length=512, description="Cursor from the previous page's Link.")
    ] = None,
) -> PageRequest:
    if after is not None and limit is None:
        raise Unprocessable("'after' needs 'limit'.")
    return PageRequest(limit=limit, after=decode_cursor(after) if after else None)


PageDep = Annotated[PageRequest, Depends(page_request)]


def announce_next_page(
    request: Request, response: Response, page: PageRequest, last_key: list[Any] | None
) -> None:
    """Set ``Link: <…?limit=n&after=…>; rel="next"`` when there is a next page."""
    if page.limit is None or last_key is None:
        return
    url = request.url.include_query_params(limit=page.limit, after=encode_cursor(last_key))
    response.headers["Link"] = f'<{url}>; rel="next"'


def split_page(rows: list[T], page: PageRequest) -> tuple[list[T], bool]:
    """The rows of this page and whether more follow."""
    if page.limit is None or len(rows) <= page.limit:
        return rows, False
    return rows[: page.limit], True

"""CSV export: ``Accept: text/csv`` on list reads (docs/progress.md, "CSV export").

The columns are the JSON fields, by their JSON names, in the same order; one row per
item (RFC 4180: comma-separated, CRLF line ends, fields quoted when needed, UTF-8 with
a header row). Lists (a team's ``Tags``) are joined with ``;``; ``null`` is an empty
cell; booleans are ``true``/``false``. A text cell that a spreadsheet would run as a
formula (starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return) gets a
leading ``'`` (OWASP "CSV injection"). The body is streamed in chunks, and sent as an
attachment.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from fastapi import Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

MEDIA_TYPE = "text/csv"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CHUNK_ROWS = 500


def wants_csv(request: Request) -> bool:
    """``Accept`` prefers ``text/csv`` to JSON (quality values honoured; ties and
    wildcards go to JSON)."""
    header = request.headers.get("accept", "")
    if "csv" not in header.lower():
        return False
    best: dict[str, float] = {}
    for part in header.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        media = media.lower()
        best[media] = max(best.get(media, 0.0), quality)
    csv_q = best.get(MEDIA_TYPE, 0.0)
    json_q = max(best.get("application/json", 0.0), best.get("*/*", 0.0) * 0.999)
    return csv_q > 0 and csv_q > json_q


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return escape(";".join(cell(v) for v in value))
    if isinstance(value, int | float):
        return str(value)
    return escape(str(value))


def escape(text: str) -> str:
    """Neutralize a cell a spreadsheet would evaluate."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def columns(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def lines(model: type[BaseModel], items: Iterable[BaseModel]) -> Iterator[bytes]:
    header = columns(model)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    for count, item in enumerate(items, start=1):
        row = item.model_dump(mode="json", by_alias=True)
        writer.writerow([cell(row.get(name)) for name in header])
        if count % CHUNK_ROWS == 0:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


def response(
    model: type[BaseModel],
    items: Sequence[BaseModel],
    *,
    filename: str,
    headers: dict[str, str] | None = None,
) -> StreamingResponse:
    return StreamingResponse(
        lines(model, items),
        media_type=f"{MEDIA_TYPE}; charset=utf-8; header=present",
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Vary": "Accept",
            **(headers or {}),
        },
    )


def export(
    model: type[BaseModel], items: Sequence[BaseModel], filename: str, answer: Response
) -> StreamingResponse:
    """The CSV answer of an endpoint, keeping the ``Link`` it set (not an ``ETag``: that
    names the JSON representation)."""
    kept = {k: v for k, v in answer.headers.items() if k.lower() == "link"}
    return response(model, items, filename=filename, headers=kept)


def openapi(model: type[BaseModel], example: str | None = None) -> dict[int | str, Any]:
    """The ``text/csv`` alternative of a 200 answer, for ``responses=``."""
    header = ",".join(columns(model))
    return {
        200: {
            "description": "The list; as CSV (RFC 4180, UTF-8, header row, sent as an "
            "attachment) with `Accept: text/csv`.",
            "content": {
                MEDIA_TYPE: {
                    "schema": {"type": "string"},
                    "example": example or header + "\r\n",
                }
            },
        }
    }

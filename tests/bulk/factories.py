"""Bulk requests for the tests: JSON arrays, CSV bodies, and posting them."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

import httpx

from tests.factories import Org

HEADER = ("team", "email", "givenName", "tags")


def csv_text(
    rows: Iterable[Sequence[str]], *, header: Sequence[str] = HEADER, newline: str = "\r\n"
) -> str:
    """A CSV document as a spreadsheet writes it (quotes where needed)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=newline)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def team_items(count: int, prefix: str = "Team", **fields: Any) -> list[dict[str, Any]]:
    return [{"name": f"{prefix} {i:05d}", **fields} for i in range(count)]


async def post_json(
    org: Org, items: Any, *, headers: dict[str, str] | None = None
) -> httpx.Response:
    return await org.client.post("/team/bulk", json=items, headers=headers or org.admin)


async def post_csv(
    org: Org,
    body: str | bytes,
    *,
    headers: dict[str, str] | None = None,
    content_type: str = "text/csv",
) -> httpx.Response:
    content = body.encode() if isinstance(body, str) else body
    return await org.client.post(
        "/team/bulk",
        content=content,
        headers={**(headers or org.admin), "Content-Type": content_type},
    )


def fields_of(response: httpx.Response) -> list[str]:
    """The ``field`` of every problem in a 422, in order."""
    assert response.status_code == 422, response.text
    return [e["field"] for e in response.json()["errors"]]


async def team_names(org: Org) -> list[str]:
    return [t["Name"] for t in await org.teams()]

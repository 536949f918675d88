"""One outbound GET of a JSON document (a key set, a discovery document), for every
integration alike: a call of the outbound kit (``outbound.calls``: the address checked
right before, the connection pinned to it, no redirect, no proxy from the environment),
bounded in time and in size, with a failure said in one exception."""

from __future__ import annotations

from typing import Any

import orjson

from questline.outbound import addresses, calls


class FetchFailed(Exception):
    """The document cannot be had; the message says why (for an admin or the log)."""


async def get_json(
    url: str, *, allow_private: bool, http_timeout: float, max_bytes: int, what: str
) -> Any:
    """GET ``url`` and the JSON it answers, or ``FetchFailed`` naming ``what`` failed."""
    try:
        async with calls.client(timeout=http_timeout, max_connections=1) as http:
            answer = await calls.send(
                http,
                "GET",
                url,
                headers={"Accept": "application/json"},
                allow_private=allow_private,
                read_at_most=max_bytes,
            )
    except addresses.UnsafeUrl as exc:
        raise FetchFailed(f"The {what} cannot be fetched: {exc}") from exc
    except TimeoutError as exc:
        raise FetchFailed(f"The {what} at {url} did not answer in time.") from exc
    except calls.CallFailed as exc:
        raise FetchFailed(f"The {what} at {url} cannot be fetched ({exc.kind}).") from exc
    if answer.status_code != 200:
        raise FetchFailed(f"The {what} at {url} answered HTTP {answer.status_code}.")
    if answer.cut:
        raise FetchFailed(f"The {what} at {url} is larger than {max_bytes} bytes.")
    try:
        return orjson.loads(answer.body)
    except orjson.JSONDecodeError as exc:
        raise FetchFailed(f"The {what} at {url} is not JSON.") from exc

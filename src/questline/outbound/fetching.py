"""One outbound GET of a JSON document (a key set, a discovery document), for every
integration alike: the address checked right before (``addresses.check``), the
connection pinned to the address checked (the Host header and TLS server name stay
the URL's host), no redirect followed, no proxy taken from the environment, bounded in
time and in size."""

from __future__ import annotations

import functools
import ssl
from typing import Any

import httpx

from questline.outbound import addresses


class FetchFailed(Exception):
    """The document cannot be had; the message says why (for an admin or the log)."""


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, made once per process: every new client would load
    the CA bundle again (a fraction of a second of CPU each)."""
    return httpx.create_ssl_context()


def http_client(*, timeout: float) -> httpx.AsyncClient:
    """A client for calls to another service: bounded in time, never following
    redirects, no proxy from the environment."""
    return httpx.AsyncClient(
        timeout=timeout, follow_redirects=False, trust_env=False, verify=tls_context()
    )


async def get_json(
    url: str, *, allow_private: bool, http_timeout: float, max_bytes: int, what: str
) -> Any:
    """GET ``url`` and the JSON it answers, or ``FetchFailed`` naming ``what`` failed."""
    try:
        target = await addresses.check(url, allow_private=allow_private)
    except addresses.UnsafeUrl as exc:
        raise FetchFailed(f"The {what} cannot be fetched: {exc}") from exc
    body = bytearray()
    try:
        async with (
            http_client(timeout=http_timeout) as client,
            client.stream(
                "GET",
                addresses.pinned_url(target),
                headers={"Accept": "application/json", "host": httpx.URL(url).netloc.decode()},
                extensions={"sni_hostname": target.host},
            ) as answer,
        ):
            if answer.status_code != 200:
                raise FetchFailed(f"The {what} at {url} answered HTTP {answer.status_code}.")
            async for chunk in answer.aiter_bytes():
                body.extend(chunk)
                if len(body) > max_bytes:
                    raise FetchFailed(f"The {what} at {url} is larger than {max_bytes} bytes.")
    except httpx.TimeoutException as exc:
        raise FetchFailed(f"The {what} at {url} did not answer in time.") from exc
    except httpx.HTTPError as exc:
        raise FetchFailed(f"The {what} at {url} cannot be fetched ({type(exc).__name__}).") from exc
    try:
        return httpx.Response(200, content=bytes(body)).json()
    except ValueError as exc:
        raise FetchFailed(f"The {what} at {url} is not JSON.") from exc

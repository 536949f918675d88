"""One POST to a checked address: the SSRF check right before, the connection pinned
to the address checked (the Host header and TLS server name stay the URL's host)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from questline.outbound import addresses


@dataclass(frozen=True, slots=True)
class Answer:
    status_code: int
    body: bytes
    """At most the ``read_at_most`` first bytes of the answer's body."""


def client(*, timeout: float, max_connections: int) -> httpx.AsyncClient:
    """A connection pool for deliveries: no redirects followed, no proxy from the
    environment (a delivery goes where it was checked to go)."""
    return httpx.AsyncClient(
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        limits=httpx.Limits(max_connections=max_connections),
    )


async def post(
    http: httpx.AsyncClient,
    url: str,
    *,
    content: bytes,
    headers: dict[str, str],
    allow_private: bool,
    read_at_most: int = 0,
) -> Answer:
    """POST ``content`` to ``url`` after ``addresses.check`` (``UnsafeUrl`` when refused;
    ``httpx.HTTPError`` when the connection fails). The caller bounds the time."""
    target = await addresses.check(url, allow_private=allow_private)
    request = http.build_request(
        "POST",
        addresses.pinned_url(target),
        content=content,
        headers={**headers, "host": httpx.URL(url).netloc.decode("ascii")},
        extensions={"sni_hostname": target.host},
    )
    response = await http.send(request, stream=True)
    try:
        body = b""
        if read_at_most > 0:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= read_at_most:
                    body = body[:read_at_most]
                    break
    finally:
        await response.aclose()
    return Answer(response.status_code, body)


def receiving_host(url: str) -> str:
    """The host a delivery goes to, as the per-host limit counts it: the URL's host
    name, lower case (every port and scheme of one host together)."""
    return (httpx.URL(url).host or url).lower()

"""One POST to a checked address: the SSRF check right before, the connection pinned
to the address checked (the Host header and TLS server name stay the URL's host).

Pinning uses httpx's public surface only: the request goes to the URL with its host
replaced by the checked address, with the original ``Host`` header and the
``sni_hostname`` request extension, which httpcore uses as the TLS server name and for
the certificate's host name check. A pool keyed by address alone would hand a TLS
connection verified for one name to a request for another name on the same address,
so HTTPS connections are pooled per server name (``PerServerName``).
"""

from __future__ import annotations

import ssl
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

from questline.outbound import addresses

DRAIN_AT_MOST = 64 * 1024
"""An answer's body up to this size is read (and dropped) to keep its connection."""
SERVER_NAMES_KEPT = 256
"""Idle per-name pools beyond this many are closed, least recently used first."""


@dataclass(frozen=True, slots=True)
class Answer:
    status_code: int
    body: bytes
    """At most the ``read_at_most`` first bytes of the answer's body."""


class PerServerName(httpx.AsyncBaseTransport):
    """Connection pools keyed by TLS server name (HTTPS) on top of httpx's own, which
    key by scheme, address and port: a connection is reused only for the name it was
    verified for. Plain HTTP shares one pool (no identity was verified)."""

    def __init__(
        self, *, limits: httpx.Limits, verify: ssl.SSLContext | bool, kept: int = SERVER_NAMES_KEPT
    ) -> None:
        self._limits = limits
        self._verify = verify
        self._kept = kept
        self._pools: OrderedDict[str, httpx.AsyncHTTPTransport] = OrderedDict()
        self._busy: Counter[str] = Counter()

    def _key(self, request: httpx.Request) -> str:
        if request.url.scheme != "https":
            return ""
        name = request.extensions.get("sni_hostname")
        return str(name) if name else request.url.host

    def _pool(self, key: str) -> httpx.AsyncHTTPTransport:
        pool = self._pools.get(key)
        if pool is None:
            pool = httpx.AsyncHTTPTransport(
                limits=self._limits, verify=self._verify, trust_env=False
            )
            self._pools[key] = pool
        self._pools.move_to_end(key)
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = self._key(request)
        pool = self._pool(key)
        self._busy[key] += 1
        try:
            response = await pool.handle_async_request(request)
        except BaseException:
            await self._release(key)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_Released(response.stream, self, key),
            extensions=response.extensions,
        )

    async def _release(self, key: str) -> None:
        self._busy[key] -= 1
        if self._busy[key] <= 0:
            del self._busy[key]
        while len(self._pools) > self._kept:
            idle = next((k for k in self._pools if k not in self._busy), None)
            if idle is None:
                return
            await self._pools.pop(idle).aclose()

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), OrderedDict()
        for pool in pools:
            await pool.aclose()


class _Released(httpx.AsyncByteStream):
    """The inner response's body; closing it gives the pool back to ``PerServerName``."""

    def __init__(self, inner: httpx.AsyncByteStream, owner: PerServerName, key: str) -> None:
        self._inner = inner
        self._owner = owner
        self._key = key
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._inner.aclose()
        finally:
            await self._owner._release(self._key)


def client(
    *, timeout: float, max_connections: int, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncClient:
    """A connection pool for deliveries: no redirects followed, no proxy from the
    environment (a delivery goes where it was checked to go), HTTPS connections reused
    only for the server name they were verified for."""
    limits = httpx.Limits(max_connections=max_connections)
    return httpx.AsyncClient(
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        transport=PerServerName(limits=limits, verify=verify),
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
        seen = 0
        # A short answer is read to its end, so that its connection goes back to the
        # pool (one closed early is dropped); a long one is cut at the limit.
        async for chunk in response.aiter_bytes():
            if len(body) < read_at_most:
                body += chunk[: read_at_most - len(body)]
            seen += len(chunk)
            if seen > max(read_at_most, DRAIN_AT_MOST):
                break
    finally:
        await response.aclose()
    return Answer(response.status_code, body)


def receiving_host(url: str) -> str:
    """The host a delivery goes to, as the per-host limit counts it: the URL's host
    name, lower case (every port and scheme of one host together)."""
    return (httpx.URL(url).host or url).lower()

"""One call to another service, for every integration alike (webhook attempts, xAPI
statements, LTI services, key sets and discovery documents): the SSRF check right
before, the connection pinned to the address checked (the Host header and TLS server
name stay the URL's host), no redirect followed, no proxy taken from the environment,
bounded in time and in what is read.

Calls go through aiohttp, whose request costs about a tenth of the CPU of httpx's:
deliveries are outbound traffic that grows with the service's writes
(docs/performance.md, "The outbox and the dispatchers"). The sign-in flow's token
exchange is authlib's client (``sso.flow``), on httpx.

Pinning uses aiohttp's public surface only: the request goes to the URL with its host
replaced by the checked address, with the original ``Host`` header and
``server_hostname`` as the TLS server name and the name the certificate is checked
for. aiohttp keys its pooled connections by address, port, TLS context *and* server
name, so a TLS connection verified for one name is never handed to a request for
another name on the same address.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass
from types import TracebackType

import aiohttp
import certifi
from yarl import URL

from questline.outbound import addresses

DRAIN_AT_MOST = 64 * 1024
"""An answer's body up to this size is read (and dropped) to keep its connection."""
DEFAULT_PORTS = {"http": 80, "https": 443}


class CallFailed(Exception):
    """The call got no answer (connection refused or reset, TLS failed, the answer
    malformed); the message names what failed, never what was sent."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        """What failed, in a word (the client library's name for it)."""


@dataclass(frozen=True, slots=True)
class Answer:
    status_code: int
    body: bytes
    """At most the ``read_at_most`` first bytes of the answer's body."""
    cut: bool = False
    """The body was longer than ``read_at_most`` (``body`` holds its beginning)."""
    header_lines: tuple[tuple[str, str], ...] = ()
    """The answer's headers, names in lower case, in their order."""

    def header_values(self, name: str) -> list[str]:
        """Every value of the header ``name`` (any case), in order."""
        name = name.lower()
        return [value for key, value in self.header_lines if key == name]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The context every call verifies certificates with (the certifi bundle), made once
    per process: each new context would load the bundle again (a fraction of a second
    of CPU)."""
    return ssl.create_default_context(cafile=certifi.where())


class Caller:
    """A connection pool for calls: no redirects followed, no proxy from the
    environment (a delivery goes where it was checked to go), HTTPS connections reused
    only for the server name they were verified for. Opened on first use (it belongs
    to the event loop that uses it)."""

    def __init__(
        self, *, timeout: float, max_connections: int, verify: ssl.SSLContext | bool
    ) -> None:
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._max_connections = max_connections
        self._tls: ssl.SSLContext | bool = tls_context() if verify is True else verify
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, ssl=self._tls)
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                trust_env=False,
                skip_auto_headers=("User-Agent",),
            )
        return self._session

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> Caller:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def client(*, timeout: float, max_connections: int, verify: ssl.SSLContext | bool = True) -> Caller:
    """The pool of a dispatcher (or of one test call): at most ``max_connections``
    connections, each request bounded by ``timeout`` seconds."""
    return Caller(timeout=timeout, max_connections=max_connections, verify=verify)


def host_header(url: URL) -> str:
    """The ``Host`` header of ``url``: its host (IDNA-encoded, IPv6 in brackets) and its
    port when it is not the scheme's default."""
    host = url.raw_host or ""
    if ":" in host:
        host = f"[{host}]"
    port = url.explicit_port
    if port is None or port == DEFAULT_PORTS.get(url.scheme):
        return host
    return f"{host}:{port}"


async def send(
    http: Caller,
    method: str,
    url: str,
    *,
    headers: dict[str, str],
    allow_private: bool,
    content: bytes | None = None,
    read_at_most: int = 0,
) -> Answer:
    """``method`` ``url`` after ``addresses.check`` (``UnsafeUrl`` when refused;
    ``CallFailed`` when there is no answer; ``TimeoutError`` past the pool's timeout).
    The answer's body is read up to ``read_at_most`` bytes (``Answer.cut`` when it is
    longer)."""
    target = await addresses.check(url, allow_private=allow_private)
    try:
        async with http.session().request(
            method,
            URL(addresses.pinned_url(target), encoded=True),
            data=content,
            headers={**headers, "Host": host_header(URL(url))},
            server_hostname=target.host if target.url.startswith("https:") else None,
            allow_redirects=False,
        ) as response:
            body = b""
            seen = 0
            # A short answer is read to its end, so that its connection goes back to the
            # pool (one left unread is closed); a long one is cut at the limit.
            async for chunk in response.content.iter_any():
                if len(body) < read_at_most:
                    body += chunk[: read_at_most - len(body)]
                seen += len(chunk)
                if seen > max(read_at_most, DRAIN_AT_MOST):
                    response.close()
                    break
            lines = tuple((key.lower(), value) for key, value in response.headers.items())
            return Answer(response.status, body, seen > read_at_most, lines)
    except TimeoutError:
        raise  # the caller's deadline, not a failed connection
    except aiohttp.ClientError as exc:
        raise CallFailed(type(exc).__name__, str(exc)) from exc


async def post(
    http: Caller,
    url: str,
    *,
    content: bytes,
    headers: dict[str, str],
    allow_private: bool,
    read_at_most: int = 0,
) -> Answer:
    """POST ``content`` to ``url`` (``send``)."""
    return await send(
        http,
        "POST",
        url,
        headers=headers,
        allow_private=allow_private,
        content=content,
        read_at_most=read_at_most,
    )


def receiving_host(url: str) -> str:
    """The host a delivery goes to, as the per-host limit counts it: the URL's host
    name, lower case (every port and scheme of one host together)."""
    try:
        host = URL(url).host
    except ValueError:
        host = None
    return (host or url).lower()

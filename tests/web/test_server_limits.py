"""The server boundary, against a live ``questline serve`` over raw sockets.

Header size (per line and total), request line and query length, the header-read and
body-read deadlines, connections and concurrent requests per worker, no ``server``
header, and ``X-Forwarded-For`` believed from configured proxies only. The limits are
set small here so that the tests are quick; docs/reliability.md lists the defaults.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role
from tests.support.live import LiveServer

pytestmark = pytest.mark.slow

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0
MAX_CONNECTIONS = 12
MAX_CONCURRENT = 3


class Deployment:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.secret = secrets.token_urlsafe(32)
        self.settings = Settings(
            data_dir=root / "data",
            jwt_secret=self.secret,
            _env_file=None,  # type: ignore[call-arg]
        )
        upgrade(self.settings)
        self.tokens = TokenService(self.settings)
        self.org = uuid.uuid4()
        self.servers: list[LiveServer] = []

    def server(self, **extra: str) -> LiveServer:
        env = {
            "QUESTLINE_DATA_DIR": str(self.root / "data"),
            "QUESTLINE_JWT_SECRET": self.secret,
            "QUESTLINE_RATE_LIMIT_ENABLED": "false",
            **extra,
        }
        log = self.root / f"server-{len(self.servers)}.log"
        server = LiveServer(env=env, log_path=log).start()
        self.servers.append(server)
        return server

    @property
    def admin(self) -> str:
        return self.tokens.mint(role=Role.ADMIN, org_id=self.org, subject="admin")

    def close(self) -> None:
        for server in self.servers:
            server.stop()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    made = Deployment(tmp_path_factory.mktemp("limits"))
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module")
def server(deployment: Deployment) -> LiveServer:
    return deployment.server(
        QUESTLINE_SERVER_HEADER_TIMEOUT_SECONDS=str(HEADER_TIMEOUT),
        QUESTLINE_SERVER_BODY_TIMEOUT_SECONDS=str(BODY_TIMEOUT),
        QUESTLINE_SERVER_MAX_CONNECTIONS=str(MAX_CONNECTIONS),
        QUESTLINE_SERVER_MAX_CONCURRENT_REQUESTS=str(MAX_CONCURRENT),
        QUESTLINE_SERVER_QUEUE_REQUESTS="0",  # the refusal itself (the queue: test_admission)
    )


@contextlib.contextmanager
def connection(server: LiveServer, timeout: float = 10) -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    try:
        yield sock
    finally:
        sock.close()


def read_response(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or the timeout)."""
    chunks: list[bytes] = []
    with contextlib.suppress(TimeoutError, ConnectionResetError):
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def closed_by_server(sock: socket.socket) -> tuple[bytes, bool]:
    """What the server sends, and whether it closed the connection (rather than the
    client's socket timeout, a deadline to fail on, ending the wait)."""
    chunks: list[bytes] = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    except TimeoutError:
        return b"".join(chunks), False
    return b"".join(chunks), True


GIVE_UP = 60
"""Seconds a client waits for the server to close: far past any of its timeouts, so
only a server that never closes fails, however loaded the machine."""


def send_quietly(sock: socket.socket, data: bytes) -> int:
    """Send in pieces; how many bytes went out before the server closed on us."""
    sent = 0
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
        for start in range(0, len(data), 65536):
            sock.sendall(data[start : start + 65536])
            sent = start + 65536
    return sent


def status_of(raw: bytes) -> int:
    assert raw.startswith(b"HTTP/1.1 "), raw[:200]
    return int(raw.split(b" ", 2)[1])


def test_a_huge_header_is_431_without_being_read(server: LiveServer) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (50 * 1024 * 1024)
    with connection(server) as sock:
        sent = send_quietly(sock, head)
        raw = read_response(sock)
    assert status_of(raw) == 431
    assert b"application/problem+json" in raw
    assert sent < 10 * 1024 * 1024, "the server read far more than its limit"
    assert httpx.get(f"{server.url}/healthz").status_code == 200


def test_many_headers_past_the_total_are_431(server: LiveServer) -> None:
    lines = b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 4000) for i in range(12))  # 48 KB
    with connection(server) as sock:
        send_quietly(sock, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n")
        raw = read_response(sock)
    assert status_of(raw) == 431
    fitting = {f"X-H{i}": "b" * 4000 for i in range(5)}  # 20 KB: within the limits
    assert httpx.get(f"{server.url}/healthz", headers=fitting).status_code == 200


def test_long_request_line_and_query_are_414(server: LiveServer) -> None:
    for target in (b"/healthz/" + b"p" * 9000, b"/healthz?q=" + b"v" * 5000):
        with connection(server) as sock:
            send_quietly(sock, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = read_response(sock)
        assert status_of(raw) == 414, target[:20]


def test_headers_sent_slowly_get_408_and_the_connection_closed(server: LiveServer) -> None:
    started = time.monotonic()  # before connecting: a deadline may run from there
    with connection(server, timeout=GIVE_UP) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(0.5)
        sock.sendall(b"Host: x\r\n")  # ...and never the empty line
        raw, closed = closed_by_server(sock)
        waited = time.monotonic() - started
    assert status_of(raw) == 408
    assert closed
    assert waited >= HEADER_TIMEOUT - 0.01  # the deadline closed it (ms clock), not sooner


def test_a_connection_that_sends_nothing_is_closed(server: LiveServer) -> None:
    started = time.monotonic()  # before connecting: a deadline may run from there
    with connection(server, timeout=GIVE_UP) as sock:
        raw, closed = closed_by_server(sock)
        waited = time.monotonic() - started
    assert (raw, closed) == (b"", True)
    assert waited >= HEADER_TIMEOUT - 0.01


def until_status(
    status: int, request: Callable[[], httpx.Response], attempts: int = 100
) -> httpx.Response:
    """The server sees sockets open or close when its loop gets to them, soon but not at
    once on a loaded machine: ask again until it answers ``status`` (the last answer if
    it never does)."""
    response = request()
    for _ in range(attempts):
        if response.status_code == status:
            break
        time.sleep(0.05)
        response = request()
    return response


def _slow_body_request(deployment: Deployment, sock: socket.socket) -> None:
    sock.sendall(
        b"POST /team HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + deployment.admin.encode() + b"\r\n"
        b"Content-Length: 100\r\n\r\n" + b'{"name": '
    )


def test_a_body_sent_slowly_gets_408_and_the_connection_closed(
    deployment: Deployment, server: LiveServer
) -> None:
    started = time.monotonic()  # before connecting: a deadline may run from there
    with connection(server, timeout=GIVE_UP) as sock:
        _slow_body_request(deployment, sock)
        raw, closed = closed_by_server(sock)
        waited = time.monotonic() - started
    assert status_of(raw) == 408, raw
    assert b"connection: close" in raw.lower()
    assert closed
    assert waited >= BODY_TIMEOUT - 0.01


def test_requests_past_the_concurrency_limit_get_a_fast_503(
    deployment: Deployment, server: LiveServer
) -> None:
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=10)]
    try:
        for sock in socks:
            _slow_body_request(deployment, sock)
        for _ in range(MAX_CONCURRENT - 1):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            socks.append(sock)
            _slow_body_request(deployment, sock)
        admin = {"Authorization": f"Bearer {deployment.admin}"}
        # once the slow requests are inside the application, waiting for their bodies
        refused = until_status(
            503, lambda: httpx.get(f"{server.url}/team", headers=admin, timeout=5)
        )
        probe = httpx.get(f"{server.url}/healthz", timeout=5)
    finally:
        for sock in socks:
            sock.close()
    assert refused.status_code == 503, refused.text
    assert refused.headers["retry-after"] == "1"
    assert refused.headers["content-type"] == "application/problem+json"
    assert probe.status_code == 200
    after = until_status(200, lambda: httpx.get(f"{server.url}/team", headers=admin))
    assert after.status_code == 200  # the closed requests gave their places back


def test_connections_past_the_cap_are_refused(server: LiveServer) -> None:
    socks = [
        socket.create_connection(("127.0.0.1", server.port), timeout=5)
        for _ in range(MAX_CONNECTIONS)
    ]
    try:
        time.sleep(0.3)
        with connection(server, timeout=5) as extra:
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = read_response(extra)
    finally:
        for sock in socks:
            sock.close()
    assert status_of(raw) == 503
    assert until_status(200, lambda: httpx.get(f"{server.url}/healthz")).status_code == 200


def test_responses_carry_no_server_header(deployment: Deployment, server: LiveServer) -> None:
    admin = {"Authorization": f"Bearer {deployment.admin}"}
    for response in (
        httpx.get(f"{server.url}/healthz"),
        httpx.get(f"{server.url}/team", headers=admin),
        httpx.get(f"{server.url}/nowhere"),
    ):
        assert "server" not in response.headers, response.headers


def test_forwarded_for_is_believed_from_configured_proxies_only(
    deployment: Deployment,
) -> None:
    """Rotating ``X-Forwarded-For`` must not open a fresh rate-limit bucket a request."""
    limited = {
        "QUESTLINE_RATE_LIMIT_ENABLED": "true",
        "QUESTLINE_RATE_LIMIT_READS": "3/minute",
    }
    default = deployment.server(**limited)
    statuses = [
        httpx.get(f"{default.url}/team", headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
        for i in range(5)
    ]
    assert statuses == [401, 401, 401, 429, 429]
    proxied = deployment.server(**limited, QUESTLINE_TRUSTED_PROXIES="127.0.0.1")
    statuses = [
        httpx.get(f"{proxied.url}/team", headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
        for i in range(5)
    ]
    assert statuses == [401] * 5  # each forwarded client its own bucket, as configured

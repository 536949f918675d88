"""JWKS keys fetched without blocking the event loop: timeout, per-kid cache with a TTL,
one fetch for many waiting requests, stale keys served while the provider is down.

The provider that hangs holds each request until the client gives up (or the test
ends), and counts the requests it holds: the tests assert what happened while a fetch
was open (a probe answered, a request served) rather than how long anything took."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from questline.app import create_app
from questline.config import Settings
from tests.support.hang import HANG_GUARD

# The keys' cache and its fetches do not touch the database: one backend.
pytestmark = [pytest.mark.anyio, pytest.mark.one_backend]


@dataclass
class Provider:
    """A local identity provider whose JWKS endpoint can be made to hang."""

    url: str = ""
    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    hang: threading.Event = field(default_factory=threading.Event)
    delay: float = 0.0
    hits: int = 0
    holding: int = 0
    """Requests held unanswered right now (the client has not given up on them)."""
    released: threading.Event = field(default_factory=threading.Event)

    def body(self) -> bytes:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": "k1", "use": "sig", "alg": "RS256"})
        return json.dumps({"keys": [jwk]}).encode()

    def token(self, kid: str = "k1") -> str:
        now = dt.datetime.now(dt.UTC)
        claims = {
            "sub": "someone",
            "org": str(uuid.uuid4()),
            "role": "admin",
            "aud": "questline",
            "iat": now,
            "exp": now + dt.timedelta(hours=1),
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def provider() -> Iterator[Provider]:
    made = Provider()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            made.hits += 1
            if made.hang.is_set():
                # Accepts, never answers: holds the request until the client gives up
                # (its end of the connection closes) or the test ends.
                made.holding += 1
                try:
                    while not made.released.is_set():
                        readable, _, _ = select.select([self.connection], [], [], 0.02)
                        if readable and not self.connection.recv(1, socket.MSG_PEEK):
                            return
                finally:
                    made.holding -= 1
                return
            time.sleep(made.delay)
            body = made.body()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    made.url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    try:
        yield made
    finally:
        made.released.set()
        made.hang.clear()
        server.shutdown()


async def _until(condition: Callable[[], bool]) -> None:
    """Until ``condition()`` holds (a deadline to fail on, not a timed assertion)."""
    with anyio.fail_after(60):
        while not condition():  # noqa: ASYNC110 - set by the provider's thread
            await anyio.sleep(0.01)


def _idp_settings(settings: Settings, provider: Provider, **extra: object) -> Settings:
    return settings.model_copy(
        update={
            "jwt_algorithms": ["RS256"],
            "jwt_jwks_url": provider.url,
            "jwt_issuer": None,
            "jwt_jwks_timeout_seconds": 0.5,
            **extra,
        }
    )


async def test_a_hanging_provider_neither_freezes_the_process_nor_gets_a_500(
    settings: Settings, provider: Provider
) -> None:
    provider.hang.set()
    # A timeout long enough that probes surely run inside it on a loaded machine; the
    # provider holds the request for ever, so an answer at all means it timed out. The
    # request verifies its token twice (rate limiter, route): the refetch pause, far
    # out here, makes the second use the first's failure however slow the machine is.
    app = create_app(
        _idp_settings(
            settings,
            provider,
            jwt_jwks_timeout_seconds=3,
            jwt_jwks_min_refetch_seconds=HANG_GUARD,
        )
    )
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            assert (await client.get("/healthz")).status_code == 200  # warm
            done = anyio.Event()
            during_fetch: list[int] = []
            """``/healthz`` answered while the provider held the fetch."""
            statuses: list[int] = []

            async def probe() -> None:
                while not done.is_set():
                    status = (await client.get("/healthz")).status_code
                    if provider.holding and not done.is_set():
                        during_fetch.append(status)
                    await anyio.sleep(0.02)

            async def authenticated() -> None:
                headers = {"Authorization": f"Bearer {provider.token()}"}
                statuses.append((await client.get("/team", headers=headers)).status_code)
                done.set()

            async with anyio.create_task_group() as group:
                group.start_soon(probe)
                group.start_soon(authenticated)
    finally:
        await app.state.questline.db.dispose()
    assert statuses == [503]  # the provider never answered: the fetch timed out
    assert provider.hits == 1
    # The loop served other requests while the fetch was open (a blocking fetch would
    # have let none through until it ended).
    assert during_fetch, "the health probe was blocked while the key was fetched"
    assert set(during_fetch) == {200}


async def test_one_fetch_serves_many_concurrent_requests(
    settings: Settings, provider: Provider
) -> None:
    provider.delay = 0.3
    # The fetch must outlast the requests' arrival, not race a timeout: the default 0.5 s
    # of these tests is a wall-clock bound a loaded machine can miss (one slow fetch →
    # 503s and a second fetch), so this test gives the fetch all the time it needs.
    app = create_app(_idp_settings(settings, provider, jwt_jwks_timeout_seconds=60))
    transport = httpx.ASGITransport(app=app)
    token = provider.token()
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            statuses: list[int] = []

            async def call() -> None:
                response = await client.get("/team", headers={"Authorization": f"Bearer {token}"})
                statuses.append(response.status_code)

            async with anyio.create_task_group() as group:
                for _ in range(20):
                    group.start_soon(call)
    finally:
        await app.state.questline.db.dispose()
    assert statuses == [200] * 20
    assert provider.hits == 1


async def test_expired_keys_are_served_stale_while_the_provider_is_down(
    settings: Settings, provider: Provider
) -> None:
    app = create_app(
        _idp_settings(settings, provider, jwt_jwks_ttl_seconds=0.2, jwt_jwks_timeout_seconds=5)
    )
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {provider.token()}"}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            assert (await client.get("/team", headers=headers)).status_code == 200
            provider.hang.set()
            await anyio.sleep(0.3)  # past the TTL
            assert (await client.get("/team", headers=headers)).status_code == 200
            # Served stale: no refresh was started, or the one started is still open
            # at the provider (a request that waited for it would have come back only
            # after the fetch timed out and its connection closed).
            assert provider.hits == 1 or provider.holding == 1, "waited for the refresh"
            await _until(lambda: provider.holding == 0)  # any refresh timed out
            assert (await client.get("/team", headers=headers)).status_code == 200
            forged_kid = {"Authorization": f"Bearer {provider.token(kid='other')}"}
            assert (await client.get("/team", headers=forged_kid)).status_code in (401, 503)
    finally:
        await app.state.questline.db.dispose()

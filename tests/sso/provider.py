"""A real OpenID provider beside the tests: ``oidc-provider-mock`` (authlib's
authorization server: discovery, keys, authorization code with PKCE, ID tokens), run on
a loopback port in a thread of the test process.

A person signs in at its authorization page by posting a ``sub``; the claims of that
subject are set through the provider's own ``PUT /users/{sub}``. Claims set there are
copied into the ID token the provider signs, so a test can have the real provider issue
a token for another audience, an expired one or one with another nonce.

It records what reaches its token endpoint (``token_requests``: the client id and
secret of each exchange, from HTTP Basic or the form), so that a test can prove which
secret was sent to which provider. The recording is a Flask ``before_request`` hook on
the provider's own application, served by werkzeug as ``run_server_in_thread`` does.

Its clients skip TLS verification (``verify=False``): everything is plain http on
loopback, and loading the CA bundle costs each new client a fraction of a second.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import flask
import httpx
import pytest
import werkzeug.serving

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # see QUIET below
    import oidc_provider_mock

QUIET = pytest.mark.filterwarnings("ignore::DeprecationWarning")
"""For the tests that use the provider: it calls authlib APIs that authlib now deprecates
(in its own thread, into this process's warnings)."""


@dataclass(frozen=True)
class TokenRequest:
    """What one call to the token endpoint carried to authenticate the client."""

    client_id: str | None
    client_secret: str | None


@dataclass(frozen=True)
class Provider:
    issuer: str
    token_requests: list[TokenRequest] = field(default_factory=list, compare=False)

    def secrets_received(self) -> set[str]:
        return {r.client_secret for r in self.token_requests if r.client_secret is not None}

    def set_user(self, sub: str, **claims: Any) -> None:
        response = httpx.put(f"{self.issuer}/users/{sub}", json=claims, timeout=60, verify=False)
        assert response.status_code == 204, response.text

    async def authorize(self, authorization_url: str, sub: str) -> str:
        """The person signs in as ``sub`` on the provider's page: the redirect back."""
        async with httpx.AsyncClient(timeout=60, verify=False) as person:
            answer = await person.post(authorization_url, data={"sub": sub})
        assert answer.status_code == 302, answer.text
        return answer.headers["location"]

    async def deny(self, authorization_url: str) -> str:
        """The person presses "Deny" on the provider's page: the redirect back."""
        async with httpx.AsyncClient(timeout=60, verify=False) as person:
            answer = await person.post(authorization_url, data={"action": "deny"})
        assert answer.status_code == 302, answer.text
        return answer.headers["location"]


def _client_credentials(request: flask.Request) -> TokenRequest:
    """RFC 6749 §2.3.1: HTTP Basic (each part form-urlencoded) or the form's fields."""
    header = request.headers.get("Authorization", "")
    if header.lower().startswith("basic "):
        decoded = base64.b64decode(header.split(" ", 1)[1]).decode()
        client_id, _, secret = decoded.partition(":")
        return TokenRequest(client_id=unquote(client_id), client_secret=unquote(secret))
    return TokenRequest(
        client_id=request.form.get("client_id"), client_secret=request.form.get("client_secret")
    )


@contextlib.contextmanager
def running_provider() -> Iterator[Provider]:
    received: list[TokenRequest] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        application = oidc_provider_mock.app()

    @application.before_request
    def record() -> None:
        if flask.request.method == "POST" and flask.request.path == "/oauth2/token":
            received.append(_client_credentials(flask.request))

    server = werkzeug.serving.make_server("localhost", 0, application, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield Provider(issuer=f"http://localhost:{server.server_port}", token_requests=received)
    finally:
        server.shutdown()
        thread.join()
        server.server_close()

"""A real OpenID provider beside the tests: ``oidc-provider-mock`` (authlib's
authorization server: discovery, keys, authorization code with PKCE, ID tokens), run on
a loopback port in a thread of the test process.

A person signs in at its authorization page by posting a ``sub``; the claims of that
subject are set through the provider's own ``PUT /users/{sub}``. Claims set there are
copied into the ID token the provider signs, so a test can have the real provider issue
a token for another audience, an expired one or one with another nonce.

Its clients skip TLS verification (``verify=False``): everything is plain http on
loopback, and loading the CA bundle costs each new client a fraction of a second.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # see QUIET below
    import oidc_provider_mock

QUIET = pytest.mark.filterwarnings("ignore::DeprecationWarning")
"""For the tests that use the provider: it calls authlib APIs that authlib now deprecates
(in its own thread, into this process's warnings)."""


@dataclass(frozen=True)
class Provider:
    issuer: str

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


@contextlib.contextmanager
def running_provider() -> Iterator[Provider]:
    with oidc_provider_mock.run_server_in_thread() as server:
        yield Provider(issuer=f"http://localhost:{server.server_port}")

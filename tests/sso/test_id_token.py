"""ID token verification on its own, with tokens a real provider issued."""

from __future__ import annotations

import warnings

import pytest
from fastapi import FastAPI

from questline.sso import claims, flow
from questline.sso.provider import providers_of
from questline.sso.refusals import LoginRefused
from tests.sso.provider import QUIET, Provider

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from authlib.integrations.httpx_client import AsyncOAuth2Client

pytestmark = [pytest.mark.anyio, QUIET]


async def _id_token(provider: Provider, *, nonce: str) -> str:
    """Sign in at ``provider`` as a relying party would, and keep its ID token."""
    provider.set_user("ada", email="ada@example.org", email_verified=True)
    redirect_uri = "http://127.0.0.1:9/callback"
    async with AsyncOAuth2Client(
        client_id="questline",
        client_secret="s",
        scope=flow.SCOPE,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        verify=False,  # plain http on loopback
    ) as client:
        verifier = "v" * 64
        url, _ = client.create_authorization_url(
            f"{provider.issuer}/oauth2/authorize", code_verifier=verifier, nonce=nonce
        )
        back = await provider.authorize(url, "ada")
        token = await client.fetch_token(
            f"{provider.issuer}/oauth2/token", authorization_response=back, code_verifier=verifier
        )
    return str(token["id_token"])


async def test_a_token_signed_with_another_providers_key_is_refused(
    app: FastAPI, provider: Provider, other_provider: Provider
) -> None:
    directory = providers_of(app.state)
    configured = await directory.provider(provider.issuer)
    genuine = await _id_token(provider, nonce="n-1")
    verified = await claims.verify_id_token(
        genuine,
        provider=configured,
        providers=directory,
        client_id="questline",
        nonce="n-1",
        access_token=None,
    )
    assert verified["email"] == "ada@example.org"

    forged = await _id_token(other_provider, nonce="n-1")
    with pytest.raises(LoginRefused) as refused:
        await claims.verify_id_token(
            forged,
            provider=configured,
            providers=directory,
            client_id="questline",
            nonce="n-1",
            access_token=None,
        )
    assert refused.value.reason == "signature"


async def test_garbage_is_an_invalid_token(app: FastAPI, provider: Provider) -> None:
    directory = providers_of(app.state)
    configured = await directory.provider(provider.issuer)
    for garbage in ("", "a.b.c", "x" * 10_000, "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0."):
        with pytest.raises(LoginRefused) as refused:
            await claims.verify_id_token(
                garbage,
                provider=configured,
                providers=directory,
                client_id="questline",
                nonce="n",
                access_token=None,
            )
        assert refused.value.reason in {"invalid-token", "signature"}

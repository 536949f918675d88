from __future__ import annotations

from collections.abc import Iterator

import pytest

from questline.config import Settings
from tests.sso.provider import Provider, running_provider


@pytest.fixture
def settings(migrated_settings: Settings) -> Settings:
    """The test provider is plain http on loopback: both allowed. Single sign-on needs
    the service's public address (its redirect URI). The provider runs in this process:
    on a loaded machine it may take seconds to answer, which is not what these tests
    are about, hence a generous timeout."""
    return migrated_settings.model_copy(
        update={
            "oidc_allow_http": True,
            "oidc_allow_private_issuers": True,
            "public_url": "http://127.0.0.1:8000",
            "oidc_http_timeout_seconds": 60,
        }
    )


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with running_provider() as running:
        yield running


@pytest.fixture(scope="module")
def other_provider() -> Iterator[Provider]:
    """A second provider, with keys of its own."""
    with running_provider() as running:
        yield running

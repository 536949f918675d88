"""Fixtures of the LTI tests: a real platform on loopback (tests/support/lti_platform.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from questline.config import Settings
from tests.support.lti_platform import LtiPlatform, running_platform

PUBLIC_URL = "http://questline.test"


@pytest.fixture
def settings(migrated_settings: Settings) -> Settings:
    """The test platform is plain http on loopback: both allowed. The tool's URLs are
    on the service's public address, here the test client's."""
    return migrated_settings.model_copy(
        update={"lti_allow_http": True, "lti_allow_private_urls": True, "public_url": PUBLIC_URL}
    )


@pytest.fixture(scope="module")
def platform() -> Iterator[LtiPlatform]:
    with running_platform() as running:
        running.state.redirect_uri = f"{PUBLIC_URL}/lti/launch"
        yield running


@pytest.fixture(scope="module")
def other_platform() -> Iterator[LtiPlatform]:
    """A second platform, with keys of its own."""
    with running_platform() as running:
        running.state.redirect_uri = f"{PUBLIC_URL}/lti/launch"
        yield running

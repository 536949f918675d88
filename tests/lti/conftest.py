"""Fixtures of the LTI tests: a real platform on loopback (tests/support/lti_platform.py),
and a third-party one (tests/support/third_party_lti.py) with Questline running as a
service."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from questline.config import Settings
from tests.support.live import LiveServer, database_env
from tests.support.lti_platform import LtiPlatform, running_platform
from tests.support.postgres import free_port
from tests.support.third_party_lti import ThirdPartyPlatform, running_third_party_platform

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


@pytest.fixture(scope="module")
def tool(
    migrated_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """Questline as a running service (``questline serve``) on a loopback port, over the
    tests' database: what a third-party platform talks to over HTTP. Its public URL is
    its own address; its dispatchers (the outbox's fan-out, the grades) run."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "QUESTLINE_DATA_DIR": str(migrated_settings.data_dir.resolve()),
        "QUESTLINE_PUBLIC_URL": url,
        "QUESTLINE_LTI_ALLOW_HTTP": "true",
        "QUESTLINE_LTI_ALLOW_PRIVATE_URLS": "true",
        "QUESTLINE_LTI_HTTP_TIMEOUT_SECONDS": "60",
        "QUESTLINE_LTI_GRADES_POLL_SECONDS": "0.2",
        "QUESTLINE_WEBHOOKS_POLL_SECONDS": "0.2",
        "QUESTLINE_XAPI_DISPATCHER_ENABLED": "false",
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_LOG_LEVEL": "INFO",  # its log names why it refused a launch
    }
    env.update(database_env(migrated_settings))
    server = LiveServer(env=env, log_path=tmp_path_factory.mktemp("tool") / "serve.log", port=port)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def third_party(tool: LiveServer) -> Iterator[ThirdPartyPlatform]:
    """OpenLearning's lti1p3platform on loopback, with the running tool registered: one
    a test, so that what it refused and kept is that test's. A launch leaves the tool a
    roster sync that runs after its answer; a sync of the test before, still running
    when this test's set-up empties the tables (the tool's keys with them), would
    otherwise ask this test's platform for a token signed with a key no longer
    published."""
    with running_third_party_platform(tool.url) as running:
        yield running

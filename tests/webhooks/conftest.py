from __future__ import annotations

from collections.abc import Iterator

import pytest

from questline.config import Settings
from tests.webhooks.receiver import Receiver, receiver


@pytest.fixture
def settings(migrated_settings: Settings) -> Settings:
    """The receiver listens on loopback: private URLs allowed; quick retries."""
    return migrated_settings.model_copy(
        update={
            "webhooks_allow_private_urls": True,
            "webhooks_retry_base_seconds": 0.01,
            "webhooks_timeout_seconds": 5,
        }
    )


@pytest.fixture
def hook_receiver() -> Iterator[Receiver]:
    with receiver() as found:
        yield found

from __future__ import annotations

from collections.abc import Iterator

import pytest

from questline.config import Settings
from tests.mail.smtp_server import Mailbox, smtp_server

PUBLIC_URL = "http://questline.test"
"""The test client's base URL: the links in the e-mails lead to the app under test."""
MAIL_FROM = "Questline <questline@example.org>"


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    with smtp_server() as found:
        yield found


@pytest.fixture
def settings(migrated_settings: Settings, mailbox: Mailbox) -> Settings:
    """Mail configured to the loopback server; quick retries."""
    return mail_settings(migrated_settings, mailbox)


def mail_settings(base: Settings, mailbox: Mailbox, **changes: object) -> Settings:
    return base.model_copy(
        update={
            "smtp_url": mailbox.url(),
            "mail_from": MAIL_FROM,
            "public_url": PUBLIC_URL,
            "mail_retry_base_seconds": 0.01,
            "smtp_timeout_seconds": 10,
            **changes,
        }
    )

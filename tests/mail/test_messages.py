"""The message builder alone: one-line header values, escaping, the sender's address;
the console mailbox of the demo."""

from __future__ import annotations

import datetime as dt
import email
import logging
from email import policy

import pytest

from questline.config import Settings
from questline.mail.messages import Letter, build, one_line, sender_address
from questline.mail.models import MailKind
from questline.mail.smtp import ConsoleMailbox, SmtpConfigError, SmtpServer


def _letter(**changes: object) -> Letter:
    values: dict[str, object] = {
        "kind": MailKind.INVITE,
        "to_email": "ada@example.org",
        "to_name": "Ada",
        "organization_name": "Example Learning",
        "link": "https://questline.example.org/ui/#code=abc",
        "valid_for": dt.timedelta(hours=72),
        "signin_page": "https://questline.example.org/ui/#/signin",
    }
    values.update(changes)
    return Letter(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Ada\r\nBcc: x@example.org", "Ada Bcc: x@example.org"),
        ("A\u2028B\u2029C\u0085D\x00E\tF", "A B C D E F"),
        ("zero\u200bwidth", "zero width"),
        ("  lots   of   space  ", "lots of space"),
    ],
)
def test_one_line_leaves_no_break_and_no_control_character(raw: str, clean: str) -> None:
    assert one_line(raw) == clean


def test_the_message_is_plain_text_and_html_with_every_value_escaped() -> None:
    message = build(
        _letter(to_name='<b>Ada</b> & "Co"', organization_name="<script>x</script>"),
        mail_from="Questline <questline@example.org>",
        now=dt.datetime(2026, 11, 27, 10, tzinfo=dt.UTC),
    )
    parsed = email.message_from_bytes(message.as_bytes(), policy=policy.default)
    assert parsed.get_content_type() == "multipart/alternative"
    html = parsed.get_body(("html",)).get_content()  # type: ignore[union-attr]
    text = parsed.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "<b>Ada</b>" not in html
    assert "&lt;b&gt;Ada&lt;/b&gt; &amp;" in html
    assert "<script>x</script> invites you" in text  # plain text is not HTML
    assert parsed["To"].addresses[0].addr_spec == "ada@example.org"
    assert parsed["To"].addresses[0].display_name == '<b>Ada</b> & "Co"'
    assert parsed["Message-ID"].endswith("@example.org>")
    assert "72 hours" in text


def test_the_sender_must_be_one_address_on_one_line() -> None:
    assert sender_address("Questline <q@example.org>") == "q@example.org"
    assert sender_address("q@example.org") == "q@example.org"
    for bad in ("Questline", "q@example.org\r\nBcc: x@example.org", ""):
        with pytest.raises(ValueError, match="QUESTLINE_MAIL_FROM"):
            sender_address(bad)


def test_a_recipient_that_is_not_one_address_is_refused() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the email package's own message
        build(
            _letter(to_email="a@example.org, b@example.org"),
            mail_from="q@example.org",
            now=dt.datetime(2026, 11, 27, tzinfo=dt.UTC),
        )


@pytest.mark.anyio
async def test_the_console_mailbox_writes_the_whole_message_to_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(_env_file=None, smtp_url="console:")  # type: ignore[call-arg]
    mailbox = SmtpServer.of(settings)
    assert isinstance(mailbox, ConsoleMailbox)
    message = build(
        _letter(), mail_from="q@example.org", now=dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
    )
    with caplog.at_level(logging.INFO, logger="questline.mail.console"):
        await mailbox.send(message, sender="q@example.org", recipient="ada@example.org")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "ada@example.org" in logged
    assert "https://questline.example.org/ui/#code=abc" in logged  # the link to follow


def test_another_scheme_is_still_refused_naming_console() -> None:
    settings = Settings(_env_file=None, smtp_url="file:///tmp/mail")  # type: ignore[call-arg]
    with pytest.raises(SmtpConfigError, match="console:"):
        SmtpServer.of(settings)

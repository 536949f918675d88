"""The SMTP server of the settings, and sending one message to it (aiosmtplib).

``console:`` instead of a server writes each message to the service's log, as Django's
console e-mail backend does: the demo (``make run``) signs people in by e-mailed links
without an SMTP server, the link read off the console.

``smtp://`` connects in the clear and upgrades with STARTTLS whenever the server offers
it (aiosmtplib's ``start_tls=None``); ``smtps://`` speaks TLS from the first byte.
Certificates are verified (against ``QUESTLINE_SMTP_CA_FILE`` when set). User and
password come from the URL (percent-encoded) or from ``QUESTLINE_SMTP_USERNAME`` and
``QUESTLINE_SMTP_PASSWORD``, which win when set.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

import aiosmtplib

from questline.config import Settings

SCHEMES = {"smtp": (25, False), "smtps": (465, True)}
"""Scheme → (default port, TLS from the start)."""
CONSOLE = "console"

logger = logging.getLogger("questline.mail.console")


class SmtpConfigError(ValueError):
    """``QUESTLINE_SMTP_URL`` cannot be used (the message says why)."""


@dataclass(frozen=True, slots=True)
class SmtpServer:
    host: str
    port: int
    implicit_tls: bool
    username: str | None
    password: str | None = field(repr=False)
    timeout: float
    ca_file: str | None

    @classmethod
    def of(cls, settings: Settings) -> SmtpServer | ConsoleMailbox | None:
        """The configured server (or the console), or None when ``QUESTLINE_SMTP_URL``
        is unset."""
        if not settings.smtp_url:
            return None
        try:
            parts = urlsplit(settings.smtp_url.strip())
            port = parts.port
        except ValueError as exc:
            raise SmtpConfigError(f"QUESTLINE_SMTP_URL is not a URL: {exc}.") from None
        scheme = parts.scheme.lower()
        if scheme == CONSOLE:
            return ConsoleMailbox()
        if scheme not in SCHEMES:
            raise SmtpConfigError(
                "QUESTLINE_SMTP_URL must start with smtp:// (STARTTLS when offered) or "
                f"smtps:// (TLS), or be console: (the log), not {parts.scheme or 'nothing'}://."
            )
        if not parts.hostname:
            raise SmtpConfigError("QUESTLINE_SMTP_URL names no host (smtp://host:587).")
        default_port, implicit_tls = SCHEMES[scheme]
        username = settings.smtp_username or (unquote(parts.username) if parts.username else None)
        password = settings.smtp_password or (unquote(parts.password) if parts.password else None)
        return cls(
            host=parts.hostname,
            port=port or default_port,
            implicit_tls=implicit_tls,
            username=username,
            password=password,
            timeout=settings.smtp_timeout_seconds,
            ca_file=str(settings.smtp_ca_file) if settings.smtp_ca_file else None,
        )

    def describe(self) -> str:
        """Where mail goes, for logs (no password)."""
        scheme = "smtps" if self.implicit_tls else "smtp"
        user = f"{self.username}@" if self.username else ""
        return f"{scheme}://{user}{self.host}:{self.port}"

    async def send(self, message: EmailMessage, *, sender: str, recipient: str) -> None:
        """Hand one message to the server; raises ``aiosmtplib.SMTPException`` (or
        ``OSError``/``TimeoutError``) when it is not accepted."""
        await aiosmtplib.send(
            message,
            sender=sender,
            recipients=[recipient],
            hostname=self.host,
            port=self.port,
            username=self.username,
            password=self.password if self.username else None,
            use_tls=self.implicit_tls,
            start_tls=False if self.implicit_tls else None,
            cert_bundle=self.ca_file,
            timeout=self.timeout,
        )


@dataclass(frozen=True, slots=True)
class ConsoleMailbox:
    """``QUESTLINE_SMTP_URL=console:``: every message is written to the log, whole (a
    development and demo setting: the links in it sign people in)."""

    def describe(self) -> str:
        return "the console (QUESTLINE_SMTP_URL=console:)"

    async def send(self, message: EmailMessage, *, sender: str, recipient: str) -> None:
        body = message.get_body(preferencelist=("plain",))
        text = body.get_content() if body is not None else ""
        logger.warning("e-mail to %s from %s: %s\n%s", recipient, sender, message["Subject"], text)


def is_permanent(exc: BaseException) -> bool:
    """A refusal that a retry will not change: the server answered 5xx for this message
    or its recipient. A 4xx, a dropped connection or a timeout is retried, and so is a
    refused login or sender: the service's own settings, which an operator can fix."""
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        return bool(exc.recipients) and all(500 <= e.code < 600 for e in exc.recipients)
    if isinstance(exc, aiosmtplib.SMTPAuthenticationError | aiosmtplib.SMTPSenderRefused):
        return False
    return isinstance(exc, aiosmtplib.SMTPResponseException) and 500 <= exc.code < 600

"""A real SMTP server on loopback (aiosmtpd, in a thread of its own) that keeps every
message it accepts, and answers with the SMTP replies it is told to first.

Optionally it offers STARTTLS with a certificate made for 127.0.0.1 and asks for a login
(``tls_and_login``): the client must upgrade, verify the certificate against the file
it is given, and authenticate.
"""

from __future__ import annotations

import datetime as dt
import email
import ipaddress
import re
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

from tests.support.postgres import free_port

LINK = re.compile(r"https?://\S+/ui/#code=[A-Za-z0-9_-]+")


@dataclass
class Received:
    sender: str
    recipients: list[str]
    raw: bytes

    @property
    def message(self) -> EmailMessage:
        parsed = email.message_from_bytes(self.raw, policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed

    @property
    def text(self) -> str:
        body = self.message.get_body(("plain",))
        assert body is not None
        return str(body.get_content())  # type: ignore[attr-defined]

    @property
    def html(self) -> str:
        body = self.message.get_body(("html",))
        assert body is not None
        return str(body.get_content())  # type: ignore[attr-defined]

    @property
    def link(self) -> str:
        [link] = LINK.findall(self.text)
        return str(link)

    @property
    def code(self) -> str:
        return self.link.partition("#code=")[2]


@dataclass
class Mailbox:
    host: str
    port: int
    received: list[Received] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    """SMTP replies to the next DATA commands, in order ("451 …"); accepted once spent."""
    logins: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ca_file: Path | None = None

    def url(self, scheme: str = "smtp", userinfo: str = "") -> str:
        return f"{scheme}://{userinfo}{self.host}:{self.port}"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:  # noqa: N802
        with self.lock:
            if self.replies:
                return self.replies.pop(0)
            content = envelope.original_content or envelope.content or b""
            self.received.append(
                Received(
                    sender=str(envelope.mail_from),
                    recipients=list(envelope.rcpt_tos),
                    raw=content if isinstance(content, bytes) else content.encode(),
                )
            )
        return "250 Message accepted for delivery"

    def messages(self) -> list[Received]:
        with self.lock:
            return list(self.received)

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        """At least ``count`` messages (a deadline to fail on, not a timed assertion)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.messages()
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"expected {count} messages, got {len(self.messages())}")


def _authenticate(mailbox: Mailbox, user: str, password: str) -> Any:
    def check(
        server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
    ) -> AuthResult:
        if not isinstance(data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login, secret = data.login.decode(), data.password.decode()
        ok = (login, secret) == (user, password)
        if ok:
            mailbox.logins.append((login, secret))
        return AuthResult(success=ok, handled=False)

    return check


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "smtp-cert.pem", directory / "smtp-key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@contextmanager
def smtp_server(*, tls_and_login: tuple[Path, str, str] | None = None) -> Iterator[Mailbox]:
    """An SMTP server on a free loopback port. ``tls_and_login``: (a directory for the
    certificate, user, password): STARTTLS offered and required, and a login."""
    mailbox = Mailbox(host="127.0.0.1", port=free_port())
    options: dict[str, Any] = {}
    if tls_and_login is not None:
        directory, user, password = tls_and_login
        cert, key = make_certificate(directory)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        mailbox.ca_file = cert
        options = {
            "tls_context": context,
            "require_starttls": True,
            "auth_required": True,
            "authenticator": _authenticate(mailbox, user, password),
        }
    controller = Controller(mailbox, hostname=mailbox.host, port=mailbox.port, **options)
    controller.start()
    try:
        yield mailbox
    finally:
        controller.stop()

"""One delivery POST: it connects to the address that was checked, keeps the URL's
name for the ``Host`` header and for TLS (server name and certificate check), reuses a
TLS connection only for the name it was verified for, and follows no redirect."""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from questline.outbound import addresses, calls
from tests.webhooks.receiver import receiver

pytestmark = pytest.mark.anyio


@dataclass
class TlsReceiver:
    url_port: int
    ca_pem: bytes
    server_names: list[str | None] = field(default_factory=list)
    """The TLS server name of each handshake."""
    hosts: list[str] = field(default_factory=list)
    """The ``Host`` header of each request."""
    peers: list[str] = field(default_factory=list)
    """The address each request arrived on."""


def _certificates(name: str) -> tuple[bytes, bytes, bytes]:
    """A CA, and a server certificate for the DNS name ``name`` only (no IP address)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Questline test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return (
        ca.public_bytes(pem),
        leaf.public_bytes(pem),
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


@contextmanager
def tls_receiver(address: str, name: str, tmp: Any) -> Iterator[TlsReceiver]:
    """An HTTPS server (HTTP/1.1, keep-alive) on ``address`` with a certificate for
    ``name`` only; it answers 204 and notes the server name, Host header and address."""
    ca_pem, cert_pem, key_pem = _certificates(name)
    (tmp / "cert.pem").write_bytes(cert_pem)
    (tmp / "key.pem").write_bytes(key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp / "cert.pem", tmp / "key.pem")
    holder: dict[str, TlsReceiver] = {}

    def note_name(_sock: Any, server_name: str | None, _context: Any) -> None:
        holder["receiver"].server_names.append(server_name)

    context.sni_callback = note_name

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            holder["receiver"].hosts.append(self.headers.get("host", ""))
            holder["receiver"].peers.append(self.connection.getsockname()[0])
            self.send_response(204)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        address_family = (
            socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET
        )

        def get_request(self) -> tuple[Any, Any]:
            connection, peer = super().get_request()
            return context.wrap_socket(connection, server_side=True), peer

    server = Server((address, 0), Handler)
    holder["receiver"] = TlsReceiver(url_port=server.server_address[1], ca_pem=ca_pem)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder["receiver"]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
async def localhost_tls(tmp_path: Any) -> Iterator[TlsReceiver]:
    [first, *_] = await addresses.resolve("localhost", 443)
    with tls_receiver(str(first), "localhost", tmp_path) as found:
        yield found


def trusting(found: TlsReceiver) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=found.ca_pem.decode())


async def test_https_connects_to_the_checked_address_and_verifies_the_name(
    localhost_tls: TlsReceiver,
) -> None:
    url = f"https://localhost:{localhost_tls.url_port}/hook"
    target = await addresses.check(url, allow_private=True)
    assert addresses.pinned_url(target).startswith("https://" + _bracketed(target.address))
    async with calls.client(timeout=30, max_connections=4, verify=trusting(localhost_tls)) as http:
        answer = await calls.post(http, url, content=b"{}", headers={}, allow_private=True)
    assert answer.status_code == 204
    # The certificate names "localhost" only: the handshake verified the name while the
    # connection went to the address checked.
    assert localhost_tls.server_names == ["localhost"]
    assert localhost_tls.hosts == [f"localhost:{localhost_tls.url_port}"]
    assert localhost_tls.peers == [str(target.address)]


async def test_a_tls_connection_is_reused_only_for_the_name_it_was_verified_for(
    localhost_tls: TlsReceiver,
) -> None:
    """The same address under another name (here the address itself, which the
    certificate does not name) gets a connection of its own, and its check fails."""
    port = localhost_tls.url_port
    [address] = {str(a) for a in await addresses.resolve("localhost", port)}
    async with calls.client(timeout=30, max_connections=4, verify=trusting(localhost_tls)) as http:
        for _ in range(2):  # kept alive and reused for the same name
            answer = await calls.post(
                http,
                f"https://localhost:{port}/hook",
                content=b"{}",
                headers={},
                allow_private=True,
            )
            assert answer.status_code == 204
        assert localhost_tls.server_names == ["localhost"]  # one handshake, two requests
        with pytest.raises(calls.CallFailed, match="CERTIFICATE_VERIFY_FAILED"):
            await calls.post(
                http,
                f"https://{_bracketed(ipaddress.ip_address(address))}:{port}/hook",
                content=b"{}",
                headers={},
                allow_private=True,
            )
    assert len(localhost_tls.hosts) == 2


async def test_a_redirect_is_answered_not_followed() -> None:
    with receiver() as elsewhere, receiver() as first:
        first.answers = [307]
        first.answer_headers = {"location": elsewhere.url}
        async with calls.client(timeout=30, max_connections=1) as http:
            answer = await calls.post(
                http, first.url, content=b"{}", headers={}, allow_private=True
            )
        assert answer.status_code == 307
        assert len(first.requests) == 1
        assert elsewhere.requests == []


async def test_an_internal_address_is_refused_before_any_connection() -> None:
    with receiver() as inside:
        async with calls.client(timeout=30, max_connections=1) as http:
            with pytest.raises(addresses.UnsafeUrl):
                await calls.post(http, inside.url, content=b"{}", headers={}, allow_private=False)
        assert inside.requests == []


@pytest.mark.parametrize(
    ("url", "address", "pinned"),
    [
        ("https://hooks.example.org/a?b=1", "93.184.215.14", "https://93.184.215.14/a?b=1"),
        ("http://hooks.example.org:8080/a", "93.184.215.14", "http://93.184.215.14:8080/a"),
        ("https://hooks.example.org/", "2606:4700::1111", "https://[2606:4700::1111]/"),
        ("https://hooks.example.org:8443/x", "2606:4700::1111", "https://[2606:4700::1111]:8443/x"),
    ],
)
def test_the_pinned_url_names_the_checked_address(url: str, address: str, pinned: str) -> None:
    target = addresses.Target(
        url=url, host="hooks.example.org", address=ipaddress.ip_address(address)
    )
    assert addresses.pinned_url(target) == pinned


def _bracketed(address: addresses.IPAddress) -> str:
    return f"[{address}]" if address.version == 6 else str(address)

"""Where a delivery (a webhook, an LRS) may point: refusing loopback, private and
link-local targets (SSRF).

The host is resolved off the event loop (``loop.getaddrinfo`` runs in a thread) when
the webhook or LRS is saved, and again before every attempt; the attempt then connects
to the address that was checked, so a name that re-resolves to an internal address between
the check and the connection (DNS rebinding) reaches nothing it should not.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
RESOLVE_SECONDS = 5


class UnsafeUrl(ValueError):
    """The URL is malformed, does not resolve, or resolves to a refused address."""


@dataclass(frozen=True, slots=True)
class Target:
    """A checked URL and the address to connect to."""

    url: str
    host: str
    address: IPAddress


def is_internal(address: IPAddress) -> bool:
    """True for any address a delivery must not reach: loopback, private, link-local,
    multicast, reserved, unspecified, carrier-grade NAT, and IPv6 forms that carry an
    IPv4 address (mapped, compatible, 6to4, NAT64, Teredo), judged by the IPv4 address
    they lead to: ``2002:7f00:1::`` reaches 127.0.0.1 as surely as ``127.0.0.1`` does."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64_LOCAL:
            # Local-use NAT64 (RFC 8215): where the IPv4 address sits depends on the
            # prefix length the operator chose, so it cannot be read, and the prefix is
            # by definition the operator's own network.
            return True
        embedded = embedded_ipv4(address)
        if embedded is not None:
            return _internal(embedded)
    return _internal(address)


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to, for the forms that carry one: IPv4-
    mapped (``::ffff:a.b.c.d``), IPv4-translated (``::ffff:0:a.b.c.d``), IPv4-compatible
    (``::a.b.c.d``, but not ``::`` and ``::1``), 6to4 (``2002::/16``), the NAT64
    well-known prefix (``64:ff9b::/96``) and Teredo (``2001::/32``: the client's
    address, the one the tunnel delivers to)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64 or address in _TRANSLATED:
        return low
    if address in _COMPATIBLE and int(address) > 1:
        return low
    return None


def _internal(address: IPAddress) -> bool:
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local)
        or not address.is_global
        or any(
            address in network for network in _ALSO_INTERNAL if network.version == address.version
        )
    )


_ALSO_INTERNAL = (
    ipaddress.ip_network("100.64.0.0/10"),
    ipaddress.ip_network("192.0.0.0/24"),
    ipaddress.ip_network("192.88.99.0/24"),
)
"""Carrier-grade NAT, the IETF protocol assignments and the deprecated 6to4 relay
anycast: internal or nobody's, though not all of them "private" to ``ipaddress``."""
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")


def split(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UnsafeUrl("The URL must be http or https.")
    if not parts.hostname:
        raise UnsafeUrl("The URL has no host.")
    if parts.username or parts.password:
        raise UnsafeUrl("The URL must not carry credentials.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise UnsafeUrl("The URL's port is not valid.") from exc
    return parts.hostname, port


async def resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_SECONDS):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError as exc:
        raise UnsafeUrl(f"The host {host!r} did not resolve in time.") from exc
    except (OSError, UnicodeError) as exc:
        raise UnsafeUrl(f"The host {host!r} does not resolve.") from exc
    found: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise UnsafeUrl(f"The host {host!r} does not resolve.")
    return found


async def check(url: str, *, allow_private: bool) -> Target:
    """The target to connect to, or ``UnsafeUrl`` saying why the URL is refused.

    Every address the name resolves to must be public (one internal answer is enough
    to refuse: the resolver may hand out any of them)."""
    host, port = split(url)
    addresses = await resolve(host, port)
    if not allow_private:
        internal = [a for a in addresses if is_internal(a)]
        if internal:
            raise UnsafeUrl(
                f"The host {host!r} resolves to {internal[0]}, a loopback, private or "
                "link-local address; deliveries (webhooks, xAPI statements) only go to public "
                "addresses."
            )
    return Target(url=url, host=host, address=addresses[0])


def pinned_url(target: Target) -> str:
    """The URL with its host replaced by the checked address (the Host header and TLS
    server name stay the original host)."""
    parts = urlsplit(target.url)
    address = str(target.address)
    if isinstance(target.address, ipaddress.IPv6Address):
        address = f"[{address}]"
    netloc = address if parts.port is None else f"{address}:{parts.port}"
    return parts._replace(netloc=netloc).geturl()

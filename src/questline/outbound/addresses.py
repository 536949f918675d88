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
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED)
    )


_SHARED = ipaddress.ip_network("100.64.0.0/10")
"""Carrier-grade NAT: not "private" to ``ipaddress``, but internal all the same."""


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

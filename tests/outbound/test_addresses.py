"""Which addresses a delivery may reach: every internal range, and every IPv6 form that
tunnels to an internal IPv4 address, is refused; public addresses (and tunnelled forms
of public ones) are not."""

from __future__ import annotations

import ipaddress

import pytest

from questline.outbound import addresses

INTERNAL = [
    # IPv4
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",  # carrier-grade NAT
    "100.127.255.254",
    "0.0.0.0",
    "224.0.0.1",  # multicast
    "240.0.0.1",  # reserved
    "255.255.255.255",
    "192.0.0.8",  # IETF protocol assignments
    "198.18.0.1",  # benchmarking
    # IPv6
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "fec0::1",  # site-local
    "ff02::1",
    "2001:db8::1",
    # IPv4-mapped and IPv4-translated
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:100.64.0.1",
    "::ffff:0:127.0.0.1",
    # IPv4-compatible
    "::127.0.0.1",
    "::10.0.0.1",
    "::169.254.169.254",
    # 6to4 embedding an internal IPv4
    "2002:7f00:1::",
    "2002:a00:1::1",
    "2002:c0a8:101::1",
    "2002:a9fe:a9fe::1",
    "2002:6440:1::1",
    # NAT64, the well-known prefix, embedding an internal IPv4
    "64:ff9b::7f00:1",
    "64:ff9b::a00:1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b::6440:1",
    # NAT64 local-use prefix: the operator's own network, whatever it embeds
    "64:ff9b:1::a00:1",
    "64:ff9b:1::808:808",
    # Teredo whose client (the address the tunnel delivers to) is internal; the
    # client address is stored inverted: ~127.0.0.1 = 0x80fffffe
    "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # 10.0.0.1
    "2001:0:4136:e378:8000:63bf:5601:5601",  # 169.254.169.254
]

PUBLIC = [
    "93.184.215.14",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700::1111",
    "2a00:1450:4001:800::200e",
    "::ffff:8.8.8.8",
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8 (an IPv6-only network's DNS64 answer)
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo, client 8.8.8.8
]


@pytest.mark.parametrize("literal", INTERNAL)
def test_internal_addresses_and_their_tunnelled_forms_are_internal(literal: str) -> None:
    assert addresses.is_internal(ipaddress.ip_address(literal))


@pytest.mark.parametrize("literal", PUBLIC)
def test_public_addresses_and_their_tunnelled_forms_are_not(literal: str) -> None:
    assert not addresses.is_internal(ipaddress.ip_address(literal))


@pytest.mark.parametrize(
    ("literal", "embedded"),
    [
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("::ffff:0:10.0.0.1", "10.0.0.1"),
        ("::10.0.0.1", "10.0.0.1"),
        ("2002:a00:1::1", "10.0.0.1"),
        ("64:ff9b::a00:1", "10.0.0.1"),
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "10.0.0.1"),
        ("::1", None),
        ("::", None),
        ("2606:4700::1111", None),
    ],
)
def test_the_embedded_ipv4_address_is_read_from_each_form(
    literal: str, embedded: str | None
) -> None:
    found = addresses.embedded_ipv4(ipaddress.IPv6Address(literal))
    assert found == (ipaddress.IPv4Address(embedded) if embedded is not None else None)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "url",
    [
        "http://[2002:7f00:1::]/hook",
        "https://[64:ff9b::a9fe:a9fe]/latest/meta-data",
        "http://[::ffff:0:127.0.0.1]:8080/",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
        "http://100.64.0.1/hook",
    ],
)
async def test_a_url_to_a_tunnelled_internal_address_is_refused(url: str) -> None:
    with pytest.raises(addresses.UnsafeUrl, match="public addresses"):
        await addresses.check(url, allow_private=False)


@pytest.mark.anyio
async def test_a_url_to_a_tunnelled_public_address_is_accepted() -> None:
    target = await addresses.check("https://[2002:808:808::1]/hook", allow_private=False)
    assert target.address == ipaddress.IPv6Address("2002:808:808::1")
    assert target.host == "2002:808:808::1"

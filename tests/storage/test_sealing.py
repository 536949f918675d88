"""The one sealer of secrets at rest: AES-GCM under a key per organization derived from
the service's signing secret, the key named in the sealed text so that a rotated-out
signing secret still opens what it sealed while it is configured as the previous one."""

from __future__ import annotations

import base64
import uuid

import pytest

from questline.storage import sealing

CURRENT = "c" * 48
PREVIOUS = "p" * 48
ORG = uuid.UUID("0190a000-0000-7000-8000-000000000001")
OTHER_ORG = uuid.UUID("0190a000-0000-7000-8000-000000000002")


def test_a_sealed_value_opens_and_shows_nothing_of_the_secret() -> None:
    sealer = sealing.Sealer(CURRENT)
    sealed = sealer.seal("whsec_topsecret", organization=ORG, purpose="webhook secret")
    assert sealed.startswith(sealing.PREFIX + sealing.key_id(CURRENT) + ":")
    assert "topsecret" not in sealed
    assert CURRENT not in sealed
    assert sealer.unseal(sealed, organization=ORG, purpose="webhook secret") == "whsec_topsecret"
    # A fresh nonce each time: two seals of one value differ.
    assert sealer.seal("whsec_topsecret", organization=ORG, purpose="webhook secret") != sealed


def test_a_sealed_value_opens_only_for_its_organization_and_purpose() -> None:
    sealer = sealing.Sealer(CURRENT)
    sealed = sealer.seal("s3cret", organization=ORG, purpose="webhook secret")
    with pytest.raises(sealing.Unreadable):
        sealer.unseal(sealed, organization=OTHER_ORG, purpose="webhook secret")
    with pytest.raises(sealing.Unreadable):
        sealer.unseal(sealed, organization=ORG, purpose="xapi lrs credentials")


def test_the_previous_signing_secret_opens_what_it_sealed_and_only_when_configured() -> None:
    old = sealing.Sealer(PREVIOUS).seal("s3cret", organization=ORG, purpose="p")
    rotated = sealing.Sealer(CURRENT, previous=PREVIOUS)
    assert rotated.unseal(old, organization=ORG, purpose="p") == "s3cret"
    assert not rotated.is_current(old)
    assert rotated.is_current(rotated.seal("s3cret", organization=ORG, purpose="p"))
    with pytest.raises(sealing.Unreadable, match="another signing secret"):
        sealing.Sealer(CURRENT).unseal(old, organization=ORG, purpose="p")


@pytest.mark.parametrize(
    "value",
    [
        "whsec_notsealed",
        "v1:AAAA",
        "qs1:",
        "qs1:deadbeef:AAAA",
    ],
)
def test_values_not_sealed_here_are_unreadable(value: str) -> None:
    with pytest.raises(sealing.Unreadable):
        sealing.Sealer(CURRENT).unseal(value, organization=ORG, purpose="p")


def test_an_altered_sealed_value_is_unreadable() -> None:
    sealer = sealing.Sealer(CURRENT)
    sealed = sealer.seal("s3cret", organization=ORG, purpose="p")
    head, _, body = sealed.rpartition(":")
    raw = bytearray(base64.urlsafe_b64decode(body))
    raw[20] ^= 0x01  # one bit past the nonce
    flipped = f"{head}:{base64.urlsafe_b64encode(bytes(raw)).decode()}"
    assert flipped != sealed
    with pytest.raises(sealing.Unreadable):
        sealer.unseal(flipped, organization=ORG, purpose="p")


def test_the_services_scope_and_an_organizations_never_open_each_others_values() -> None:
    """The service's own secrets (the LTI tool's keys) belong to no organization: sealed
    in ``SERVICE``, they open there only, even for the nil UUID as an organization."""
    sealer = sealing.Sealer(CURRENT)
    service = sealer.seal("-----BEGIN PRIVATE KEY-----", organization=sealing.SERVICE, purpose="p")
    assert sealer.unseal(service, organization=sealing.SERVICE, purpose="p").startswith("-----")
    for organization in (ORG, uuid.UUID(int=0)):
        with pytest.raises(sealing.Unreadable):
            sealer.unseal(service, organization=organization, purpose="p")
        theirs = sealer.seal("s3cret", organization=organization, purpose="p")
        with pytest.raises(sealing.Unreadable):
            sealer.unseal(theirs, organization=sealing.SERVICE, purpose="p")

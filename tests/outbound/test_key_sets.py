"""The one key-set cache (bearer tokens, single sign-on and LTI use it): cached, served
stale while one refresh runs, one fetch for everyone waiting, a floor on refetches for
unknown key ids, a bound on the sets kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from joserfc.jwk import KeySet, RSAKey

from questline.outbound.fetching import FetchFailed
from questline.outbound.key_sets import KeySets

pytestmark = pytest.mark.anyio


def _document(*kids: str) -> dict[str, Any]:
    keys = [RSAKey.generate_key(2048, parameters={"kid": kid}, private=False) for kid in kids]
    return KeySet(keys).as_dict(private=False)


class Publisher:
    """What a key set URL answers: the current document, counted; optionally slow or
    failing."""

    def __init__(self, *kids: str) -> None:
        self.document = _document(*kids)
        self.calls = 0
        self.delay = 0.0
        self.failing = False

    async def __call__(self, url: str) -> Any:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.failing:
            raise FetchFailed(f"The key set at {url} answered HTTP 500.")
        return self.document


def _kids(cached: Any) -> set[str]:
    return {key.kid for key in cached.key_set.keys}


async def test_a_set_is_fetched_once_for_everyone_waiting() -> None:
    publisher = Publisher("k1")
    publisher.delay = 0.05
    sets = KeySets(publisher, ttl=3600)
    found = await asyncio.gather(*(sets.keys("https://idp.example/jwks") for _ in range(20)))
    assert publisher.calls == 1
    assert all(f is found[0] for f in found)
    assert _kids(found[0]) == {"k1"}
    assert sets.cached("https://idp.example/jwks") is found[0]


async def test_a_stale_set_serves_while_one_refresh_runs_and_stays_when_it_fails() -> None:
    publisher = Publisher("k1")
    sets = KeySets(publisher, ttl=0.0, refetch_floor=0.0)
    first = await sets.keys("u")
    publisher.failing = True
    assert await sets.keys("u") is first  # stale, answered at once
    await asyncio.sleep(0.01)  # the background refresh failed
    assert publisher.calls == 2
    assert await sets.keys("u") is first
    publisher.failing = False
    publisher.document = _document("k2")
    await sets.keys("u")
    await asyncio.sleep(0.01)
    assert _kids(sets.cached("u")) == {"k2"}


async def test_unknown_key_ids_refetch_at_most_once_per_floor() -> None:
    publisher = Publisher("k1")
    sets = KeySets(publisher, ttl=3600, refetch_floor=3600)
    seen = await sets.keys("u")
    # Within the floor after the first fetch: nothing new is asked for.
    assert await sets.refreshed("u", seen) is None
    assert publisher.calls == 1
    rotated = KeySets(publisher, ttl=3600, refetch_floor=0.0)
    before = await rotated.keys("u")
    publisher.document = _document("k2")
    after = await rotated.refreshed("u", before)
    assert after is not None
    assert _kids(after) == {"k2"}
    # Another request that saw the old set gets the new one without a fetch.
    calls = publisher.calls
    assert await rotated.refreshed("u", before) is after
    assert publisher.calls == calls


async def test_a_set_never_had_is_a_failure_naming_why_and_the_floor_holds() -> None:
    publisher = Publisher("k1")
    publisher.failing = True
    sets = KeySets(publisher, ttl=3600, refetch_floor=3600)
    for _ in range(3):
        with pytest.raises(FetchFailed, match="HTTP 500"):
            await sets.keys("u")
    assert publisher.calls == 1


@pytest.mark.parametrize(
    "document",
    [{"keys": []}, {"keys": [{"kty": "RSA"}]}, ["not", "an", "object"]],
    ids=["empty", "unreadable", "not-an-object"],
)
async def test_a_document_without_a_usable_key_is_a_failure(document: Any) -> None:
    async def fetch(url: str) -> Any:
        return document

    with pytest.raises(FetchFailed):
        await KeySets(fetch, ttl=3600).keys("u")


async def test_at_most_max_sets_are_kept() -> None:
    publisher = Publisher("k1")
    sets = KeySets(publisher, ttl=3600, max_sets=2)
    for url in ("a", "b", "c"):
        await sets.keys(url)
    assert sets.cached("a") is None
    assert sets.cached("b") is not None
    assert sets.cached("c") is not None


async def test_a_caller_that_gives_up_does_not_cancel_the_fetch() -> None:
    publisher = Publisher("k1")
    publisher.delay = 0.2
    sets = KeySets(publisher, ttl=3600)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await sets.keys("u")
    # The next caller joins the same fetch: had it been cancelled, a second would start.
    assert _kids(await sets.keys("u")) == {"k1"}
    assert publisher.calls == 1

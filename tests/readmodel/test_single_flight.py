"""``ReadModel.load``: concurrent misses of one key and version share one build; a build
that declines (the fast lane's, leaving the request to the route) is not an answer for
the others."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from questline.readmodel.cache import Entry, Key
from questline.readmodel.service import Declined, ReadModel
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

KEY: Key = (uuid.uuid4(), "member", "/discipline/x", b"", b"")


async def test_a_declined_build_is_not_shared_with_its_waiters(app_state: AppHarness) -> None:
    readmodel: ReadModel = app_state.readmodel
    started, release = asyncio.Event(), asyncio.Event()

    async def declining() -> Entry:
        started.set()
        await release.wait()
        raise Declined

    async def building() -> Entry:
        return Entry(version=7, body=b"[]", etag='"built"')

    lean = asyncio.create_task(readmodel.load(KEY, 7, declining))
    await started.wait()
    route = asyncio.create_task(readmodel.load(KEY, 7, building))  # waits on the flight
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(Declined):
        await lean
    assert (await route).etag == '"built"'


async def test_a_failed_build_fails_its_waiters(app_state: AppHarness) -> None:
    readmodel: ReadModel = app_state.readmodel
    started, release = asyncio.Event(), asyncio.Event()
    built = 0

    async def failing() -> Entry:
        started.set()
        await release.wait()
        raise ConnectionError("the database is down")

    async def building() -> Entry:
        nonlocal built
        built += 1
        return Entry(version=7, body=b"[]", etag='"built"')

    first = asyncio.create_task(readmodel.load(KEY, 7, failing))
    await started.wait()
    second = asyncio.create_task(readmodel.load(KEY, 7, building))
    await asyncio.sleep(0)
    release.set()
    for task in (first, second):
        with pytest.raises(ConnectionError):
            await task
    assert built == 0, "the database that is down is asked once"

"""``Changes.wait``: many waiters on one organization share one poll of the version source
(issue 30: thousands of open streams must not each poll), and a version the poll finds
wakes them all."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from questline.readmodel.changes import POLL_SECONDS, Changes

pytestmark = pytest.mark.anyio

WAITERS = 200


async def test_waiters_of_one_organization_share_the_poll() -> None:
    org = uuid.uuid4()
    asked: list[uuid.UUID] = []

    async def current(organization_id: uuid.UUID) -> int | None:
        asked.append(organization_id)
        return 3

    changes = Changes(current)
    started = time.monotonic()
    found = await asyncio.gather(*(changes.wait(org, 3, 0.4) for _ in range(WAITERS)))
    elapsed = time.monotonic() - started
    assert found == [3] * WAITERS
    # each waiter asks once when it starts and once at its deadline; the poller once a
    # tick for the organization (a poll a waiter would be WAITERS times the ticks)
    ticks = elapsed / POLL_SECONDS + 2
    assert len(asked) <= 2 * WAITERS + ticks
    assert changes.watched == 0


async def test_a_version_found_by_the_poll_wakes_every_waiter() -> None:
    org, other = uuid.uuid4(), uuid.uuid4()
    versions = {org: 1, other: 7}

    async def current(organization_id: uuid.UUID) -> int | None:
        return versions[organization_id]

    changes = Changes(current)
    waiting = [asyncio.ensure_future(changes.wait(org, 1, 30)) for _ in range(50)]
    still = asyncio.ensure_future(changes.wait(other, 7, 30))
    await asyncio.sleep(0)  # every waiter runs up to its wait
    assert changes.watched == 2
    versions[org] = 2  # committed by another process: no notification, only the poll
    assert await asyncio.gather(*waiting) == [2] * 50
    assert not still.done()
    versions[other] = 8
    assert await still == 8
    assert changes.watched == 0

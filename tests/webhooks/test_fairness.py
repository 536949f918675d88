"""Fair delivery: one organization's hanging receivers never hold up another's.

A receiver that accepts connections and never answers (``hanging_receiver``) for two
organizations with many events, and one that answers for a third. The assertions are
about order and counts, never wall-clock bounds (the machine may be loaded): the third
organization's delivery arrives while every attempt to the hanging receiver is still
open, and no organization, nor the hanging host, ever had more attempts open at once
than its limit. Against the dispatcher before the slots (a whole claimed batch sent
before the next claim, one pool of 16 for everyone) the answering receiver got nothing
until the hanging attempts timed out, and 16 hung at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from questline.webhooks.dispatcher import Dispatcher
from tests.factories import World
from tests.support.harness import AppHarness
from tests.webhooks.receiver import Received, hanging_receiver, receiver
from tests.webhooks.support import pending_count, subscribe

pytestmark = pytest.mark.anyio

PER_ORGANIZATION = 3
PER_HOST = 4
HANGING_EVENTS = 12


def _fair_settings(app_state: AppHarness) -> Any:
    return app_state.settings.model_copy(
        update={
            "webhooks_concurrency": 16,
            "webhooks_concurrency_per_organization": PER_ORGANIZATION,
            "webhooks_concurrency_per_host": PER_HOST,
            # Longer than any wait below: the hanging attempts stay open until the end.
            "webhooks_timeout_seconds": 600,
            "webhooks_poll_seconds": 0.05,
        }
    )


GIVE_UP_SECONDS = 120
"""A deadline to fail on rather than hang, not a timed assertion."""


async def _wait(predicate: Any, what: str) -> None:
    """Until ``predicate()`` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + GIVE_UP_SECONDS
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(0.02)


async def test_a_hanging_organization_never_holds_up_another(
    world: World, app_state: AppHarness
) -> None:
    slow, slower, fast = world.org(), world.org(), world.org()
    with (
        hanging_receiver("127.0.0.1") as hanging,
        receiver("127.0.0.2") as answering,
    ):
        await subscribe(slow, f"{hanging.url}/slow")
        await subscribe(slower, f"{hanging.url}/slower")
        await subscribe(fast, answering.url)
        for _ in range(HANGING_EVENTS):
            await slow.create_team()
            await slower.create_team()

        seen_at_arrival: list[tuple[int, int]] = []

        def arrived(_: Received) -> None:
            # What the hanging receiver holds at the moment the answering one is reached.
            with hanging.lock:
                seen_at_arrival.append((sum(hanging.open.values()), hanging.closed))

        answering.on_request = arrived
        dispatcher = Dispatcher(
            _fair_settings(app_state), app_state.db, consumers=app_state.outbox_consumers
        )
        dispatcher.start()
        try:
            # The hanging host holds all its slots: both organizations' attempts hang.
            await asyncio.to_thread(hanging.wait_for_open, PER_HOST)
            await fast.create_team()  # a commit wakes the dispatcher
            await _wait(lambda: len(answering.requests) >= 1, "the answering receiver")
            assert answering.requests[0].json()["type"] == "team.created"
            # Its outcome is recorded while the others still hang: only the hanging
            # organizations' deliveries stay pending, unclaimed or leased.
            for _ in range(GIVE_UP_SECONDS * 10):
                if await pending_count(app_state.db) == 2 * HANGING_EVENTS:
                    break
                await asyncio.sleep(0.1)
            assert await pending_count(app_state.db) == 2 * HANGING_EVENTS
            assert dispatcher.in_flight == PER_HOST
        finally:
            await dispatcher.stop()

    # The fast organization's delivery arrived while every hanging attempt was open,
    # none of them given up, the hanging receiver's slots all taken.
    assert seen_at_arrival == [(PER_HOST, 0)]
    # The hanging host never had more attempts open than its limit, nor any
    # organization more than its own, though each had HANGING_EVENTS due.
    assert hanging.most_in_all == PER_HOST
    assert hanging.most["/slow"] <= PER_ORGANIZATION
    assert hanging.most["/slower"] <= PER_ORGANIZATION
    assert hanging.started == PER_HOST


async def test_one_organization_holds_at_most_its_slots(
    world: World, app_state: AppHarness
) -> None:
    """Alone, with two hanging webhooks and a free host limit: still its own limit."""
    org = world.org()
    with hanging_receiver() as hanging:
        await subscribe(org, f"{hanging.url}/one")
        await subscribe(org, f"{hanging.url}/two")
        for _ in range(HANGING_EVENTS):
            await org.create_team()
        settings = _fair_settings(app_state).model_copy(
            update={"webhooks_concurrency_per_host": 100}
        )
        dispatcher = Dispatcher(settings, app_state.db, consumers=app_state.outbox_consumers)
        try:
            # Passes by hand: each claims what fits the free slots and returns at once,
            # without waiting for the hanging attempts it started.
            for _ in range(5):
                await dispatcher.run_once()
            assert dispatcher.in_flight == PER_ORGANIZATION
            await asyncio.to_thread(hanging.wait_for_open, PER_ORGANIZATION)
            for _ in range(5):
                await dispatcher.run_once()
            assert dispatcher.in_flight == PER_ORGANIZATION
        finally:
            await dispatcher.close()
    assert hanging.most_in_all == PER_ORGANIZATION
    assert hanging.started == PER_ORGANIZATION

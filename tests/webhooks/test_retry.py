"""A manual retry (``POST /webhook/{id}/deliveries/{deliveryId}/retry``) is delivered
once more, with the same ``webhook-id``, whatever the delivery's state when it is
asked: waiting for a later attempt, in flight at the receiver, answered but not yet
recorded, delivered, or failed for good."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook as Verifier

from questline.config import Settings
from questline.webhooks.dispatcher import Dispatcher
from tests.factories import Org, World
from tests.support.harness import AppHarness
from tests.webhooks.receiver import Received, Receiver
from tests.webhooks.support import drain, pending_count, subscribe

pytestmark = pytest.mark.anyio


async def arrived(receiver: Receiver, count: int) -> list[Received]:
    """At least ``count`` requests at the receiver, waiting in the test's event loop
    (the dispatcher's attempts run in it too). A deadline to fail on, not a timing."""
    for _ in range(3000):
        with receiver.lock:
            if len(receiver.requests) >= count:
                return list(receiver.requests)
        await asyncio.sleep(0.01)
    raise AssertionError(f"expected {count} requests, got {len(receiver.requests)}")


async def finish_all(dispatcher: Dispatcher, state: AppHarness) -> None:
    """Passes of ``dispatcher`` until nothing is pending (the attempts awaited)."""
    for _ in range(200):
        await dispatcher.run_once()
        await dispatcher.settle()
        if await pending_count(state.db) == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("deliveries still pending")


async def the_delivery(org: Org, hook: dict[str, Any]) -> dict[str, Any]:
    response = await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    assert response.status_code == 200, response.text
    [delivery] = response.json()
    return dict(delivery)


async def retry(org: Org, hook: dict[str, Any], delivery: dict[str, Any]) -> dict[str, Any]:
    response = await org.client.post(
        f"/webhook/{hook['Id']}/deliveries/{delivery['Id']}/retry", headers=org.admin
    )
    assert response.status_code == 202, response.text
    assert response.json()["Status"] == "Pending"
    return dict(response.json())


def assert_sent_again(receiver: Receiver, hook: dict[str, Any], count: int) -> None:
    """Exactly ``count`` requests, one message: the same ``webhook-id`` and body, each
    signed."""
    with receiver.lock:
        requests = list(receiver.requests)
    assert len(requests) == count
    assert len({r.headers["webhook-id"] for r in requests}) == 1
    assert len({r.body for r in requests}) == 1
    for request in requests:
        Verifier(hook["Secret"]).verify(request.body, request.headers)


async def test_a_retry_asked_while_the_attempt_is_at_the_receiver_is_sent_again(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    await org.create_team()
    dispatcher = Dispatcher(app_state.settings, app_state.db, consumers=app_state.outbox_consumers)
    try:
        hook_receiver.hold()
        await dispatcher.run_once()  # claims and starts the attempt
        await arrived(hook_receiver, 1)
        assert dispatcher.in_flight == 1
        await retry(org, hook, await the_delivery(org, hook))
        hook_receiver.release()
        await dispatcher.settle()  # the first attempt's 204 is recorded now
        shown = await the_delivery(org, hook)
        assert shown["Status"] == "Pending"
        assert shown["LastStatusCode"] == 204
        await finish_all(dispatcher, app_state)
    finally:
        hook_receiver.release()
        await dispatcher.close()
    assert_sent_again(hook_receiver, hook, 2)
    shown = await the_delivery(org, hook)
    assert (shown["Status"], shown["Attempts"]) == ("Succeeded", 2)


async def test_a_retry_asked_after_the_answer_and_before_it_is_recorded_is_sent_again(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    """The attempt is over (the receiver answered 2xx) but its outcome still waits for
    the dispatcher's next record: the retry must not be overwritten by it."""
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    await org.create_team()
    dispatcher = Dispatcher(app_state.settings, app_state.db, consumers=app_state.outbox_consumers)
    try:
        await dispatcher.run_once()
        await arrived(hook_receiver, 1)
        for _ in range(3000):  # the attempt's task ends: its outcome waits to be recorded
            if dispatcher.in_flight == 0:
                break
            await asyncio.sleep(0.01)
        assert dispatcher.in_flight == 0
        await retry(org, hook, await the_delivery(org, hook))
        await dispatcher.record_finished()
        assert (await the_delivery(org, hook))["Status"] == "Pending"
        await finish_all(dispatcher, app_state)
    finally:
        await dispatcher.close()
    assert_sent_again(hook_receiver, hook, 2)
    assert (await the_delivery(org, hook))["Status"] == "Succeeded"


async def test_a_retry_of_a_delivery_waiting_for_its_next_attempt_goes_at_once(
    world: World, app_state: AppHarness, hook_receiver: Receiver, settings: Settings
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    hook_receiver.answers = [500]
    await org.create_team()
    patient = settings.model_copy(update={"webhooks_retry_base_seconds": 3600})
    dispatcher = Dispatcher(patient, app_state.db, consumers=app_state.outbox_consumers)
    try:
        await dispatcher.run_once()
        await dispatcher.settle()
        waiting = await the_delivery(org, hook)
        assert (waiting["Status"], waiting["LastStatusCode"]) == ("Pending", 500)
        await dispatcher.run_once()  # not due for an hour: nothing is sent
        await dispatcher.settle()
        assert len(hook_receiver.requests) == 1
        await retry(org, hook, waiting)
        await finish_all(dispatcher, app_state)
    finally:
        await dispatcher.close()
    assert_sent_again(hook_receiver, hook, 2)
    shown = await the_delivery(org, hook)
    assert (shown["Status"], shown["Attempts"], shown["LastStatusCode"]) == ("Succeeded", 2, 204)


async def test_a_retry_of_a_delivered_delivery_is_sent_once_more(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    await org.create_team()
    await drain(app_state)
    delivered = await the_delivery(org, hook)
    assert delivered["Status"] == "Succeeded"
    await retry(org, hook, delivered)
    await drain(app_state)
    assert_sent_again(hook_receiver, hook, 2)
    shown = await the_delivery(org, hook)
    assert (shown["Status"], shown["Attempts"]) == ("Succeeded", 2)


async def test_a_retry_of_a_failed_delivery_is_sent_once_more(
    world: World, app_state: AppHarness, hook_receiver: Receiver, settings: Settings
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    hook_receiver.answers = [500]
    await org.create_team()
    once = settings.model_copy(update={"webhooks_max_attempts": 1})
    await drain(app_state, settings=once)
    failed = await the_delivery(org, hook)
    assert (failed["Status"], failed["LastStatusCode"]) == ("Failed", 500)
    await retry(org, hook, failed)
    await drain(app_state, settings=once)
    assert_sent_again(hook_receiver, hook, 2)
    shown = await the_delivery(org, hook)
    assert (shown["Status"], shown["Attempts"], shown["LastError"]) == ("Succeeded", 2, None)


async def test_an_attempt_claimed_before_two_retries_leaves_one_more_send(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    """Retries asked twice while one attempt is in flight: the delivery is owed one more
    send (not two), and the in-flight attempt's result does not close it."""
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    await org.create_team()
    dispatcher = Dispatcher(app_state.settings, app_state.db, consumers=app_state.outbox_consumers)
    try:
        hook_receiver.hold()
        await dispatcher.run_once()
        await arrived(hook_receiver, 1)
        delivery = await the_delivery(org, hook)
        await retry(org, hook, delivery)
        await retry(org, hook, delivery)
        hook_receiver.release()
        await dispatcher.settle()
        await finish_all(dispatcher, app_state)
    finally:
        hook_receiver.release()
        await dispatcher.close()
    assert_sent_again(hook_receiver, hook, 2)

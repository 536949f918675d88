"""The outbox's pipeline: claims run ahead of the sends, and an attempt's end starts the
next claimed attempt itself, without waiting for a pass.

A kind of outbound work made up here: its rows are numbers, its attempts wait until the
test lets them end. Nothing starts the dispatcher's loop, so a pass runs only when the
test calls ``run_once``: what starts between two calls was started by an attempt's end.
The assertions count passes and attempts, never time. Against the dispatcher that
claimed only into free slots and filled a freed slot in the next pass, the second
attempt never started without a second pass.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from questline.outbound.fairness import Slots
from questline.outbound.outbox import CLAIM_AHEAD, Outbox, Slot
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

HOST = "receiver.example"


@dataclass(frozen=True)
class Item:
    organization_id: uuid.UUID
    number: int


@dataclass
class Numbers:
    """Due rows in order; ``send`` waits until the test releases the attempt."""

    due: list[Item]
    name: str = "numbers"
    claims: int = 0
    started: list[Item] = field(default_factory=list)
    open: dict[Item, asyncio.Event] = field(default_factory=dict)
    most_open: dict[uuid.UUID, int] = field(default_factory=dict)
    recorded: list[Item] = field(default_factory=list)

    async def prepare(self) -> bool:
        return False

    async def has_due(self, session: AsyncSession, now: dt.datetime, slots: Slots) -> bool:
        return any(not slots.organization_full(i.organization_id) for i in self.due)

    async def claim(
        self, session: AsyncSession, now: dt.datetime, slots: Slots, claimed: list[Item]
    ) -> bool:
        self.claims += 1
        for item in list(self.due):
            if slots.room() <= 0:
                break
            if slots.organization_full(item.organization_id) or slots.host_full(HOST):
                continue
            slots.take(item.organization_id, HOST, item.organization_id)
            self.due.remove(item)
            claimed.append(item)
        return False

    def slot(self, attempt: Item) -> Slot:
        return Slot(attempt.organization_id, HOST, attempt.organization_id)

    async def send(self, attempt: Item) -> Item:
        self.started.append(attempt)
        released = self.open.setdefault(attempt, asyncio.Event())
        org = attempt.organization_id
        now_open = sum(1 for i in self.open if i.organization_id == org and i in self.pending)
        self.most_open[org] = max(self.most_open.get(org, 0), now_open)
        await released.wait()
        return attempt

    @property
    def pending(self) -> set[Item]:
        return {i for i in self.started if not self.open[i].is_set()}

    def crashed(self, attempt: Item, exc: Exception) -> Item:
        return attempt

    async def record(
        self, session: AsyncSession, outcomes: Sequence[Item], now: dt.datetime
    ) -> None:
        self.recorded.extend(outcomes)

    async def purge(self, session: AsyncSession, now: dt.datetime) -> None:
        return None

    async def close(self) -> None:
        return None


def _outbox(app_state: AppHarness, kind: Numbers, slots: Slots) -> Outbox[Item, Item]:
    return Outbox(
        kind,
        settings=app_state.settings,
        db=app_state.db,
        slots=slots,
        poll_seconds=3600,
        lock_name=None,
        logger=logging.getLogger("test"),
    )


async def _ticks(count: int = 20) -> None:
    """A bounded number of event-loop iterations (the attempts' tasks run), no time."""
    for _ in range(count):
        await asyncio.sleep(0)


async def test_a_freed_slot_starts_the_next_claimed_attempt_without_a_pass(
    app_state: AppHarness,
) -> None:
    org = uuid.uuid4()
    kind = Numbers(due=[Item(org, n) for n in range(CLAIM_AHEAD)])
    outbox = _outbox(app_state, kind, Slots.of(4, per_organization=1, per_host=4))
    try:
        await outbox.run_once()
        await _ticks()
        # One claim took a batch (the cap times CLAIM_AHEAD); one attempt runs, the rest wait.
        assert kind.claims == 1
        assert kind.due == []
        assert kind.started == [Item(org, 0)]
        assert len(outbox.waiting) == CLAIM_AHEAD - 1
        for number in range(1, CLAIM_AHEAD):
            kind.open[Item(org, number - 1)].set()
            await _ticks()
            # The end of the attempt before it started this one, without a pass.
            assert kind.started == [Item(org, n) for n in range(number + 1)]
            assert outbox.in_flight == 1
        kind.open[Item(org, CLAIM_AHEAD - 1)].set()
        await _ticks()
        assert kind.claims == 1  # no pass ran since the first
        assert outbox.in_flight == 0
        assert outbox.waiting == []
        # The outcomes wait for a pass, which records them all at once.
        assert kind.recorded == []
        await outbox.run_once()
        assert kind.recorded == [Item(org, n) for n in range(CLAIM_AHEAD)]
    finally:
        await outbox.close()
    # The cap held throughout: one attempt of the organization at a time, in order.
    assert kind.most_open == {org: 1}


async def test_claimed_attempts_wait_only_for_their_own_organization(
    app_state: AppHarness,
) -> None:
    """A full organization's claimed attempts wait; another's, claimed after them in the
    same batch, start at once."""
    busy, other = uuid.uuid4(), uuid.uuid4()
    kind = Numbers(due=[Item(busy, n) for n in range(3)] + [Item(other, 0)])
    outbox = _outbox(app_state, kind, Slots.of(4, per_organization=1, per_host=4))
    try:
        await outbox.run_once()
        await _ticks()
        assert kind.claims == 1
        assert kind.started == [Item(busy, 0), Item(other, 0)]
        assert outbox.waiting == [Item(busy, 1), Item(busy, 2)]
        kind.open[Item(other, 0)].set()
        await _ticks()
        # The other organization's end frees nothing of the busy one's: it still waits.
        assert outbox.waiting == [Item(busy, 1), Item(busy, 2)]
        for number in range(3):
            kind.open[Item(busy, number)].set()
            await _ticks()
        assert kind.started == [Item(busy, 0), Item(other, 0), Item(busy, 1), Item(busy, 2)]
    finally:
        await outbox.close()
    assert kind.most_open == {busy: 1, other: 1}

"""Memos (``ReadModel.memo``): kept in the read model's bound with the bodies, measured
by ``footprint``, evicted like them; the leaderboard order's memo is compact."""

from __future__ import annotations

import array
import random
import tracemalloc
import uuid
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from questline.progress import rank_memo
from questline.progress.rank_memo import RANK_BYTES, Ranks
from questline.readmodel.cache import ByteLRU, Entry, Memo, memo_key
from questline.readmodel.footprint import footprint
from questline.readmodel.service import ReadModel
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio
ORG = uuid.uuid4()


@dataclass(frozen=True, slots=True)
class _Node:
    id: uuid.UUID
    title: str
    children: list[_Node]


def _measured(make: Any) -> tuple[Any, int]:
    """A value made under tracemalloc, with the bytes its making kept."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = make()
        return value, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "make",
    [
        lambda: frozenset(uuid.uuid4() for _ in range(2_000)),
        lambda: [
            _Node(uuid.uuid4(), f"Level {n}", [_Node(uuid.uuid4(), "Quest", []) for _ in range(5)])
            for n in range(300)
        ],
        lambda: {f"tag {n}": f"Tag {n}" for n in range(3_000)},
    ],
    ids=["set of ids", "tree of dataclasses", "mapping of strings"],
)
def test_a_footprint_is_near_what_the_value_keeps_in_memory(make: Any) -> None:
    value, kept = _measured(make)
    assert 0.5 * kept <= footprint(value) <= 1.5 * kept, (footprint(value), kept)


def test_a_value_too_large_to_walk_whole_is_extrapolated() -> None:
    value, kept = _measured(lambda: [(n, f"item {n}") for n in range(60_000)])
    assert 0.5 * kept <= footprint(value) <= 1.5 * kept, (footprint(value), kept)


def test_memos_and_bodies_share_one_bound_and_leave_least_recent_first() -> None:
    cache = ByteLRU(10_000)
    cache.put(memo_key(ORG, "tree"), Memo(1, "tree", 3_000))
    body_key = (ORG, "member", "/leaderboard", b"", b"")
    cache.put(body_key, Entry(1, b"x" * 2_000, '"1"'))
    assert cache.bytes > 5_000
    assert cache.memo(memo_key(ORG, "tree")) is not None  # now the most recent
    cache.put((ORG, "member", "/team", b"", b""), Entry(1, b"y" * 1_900, '"2"'))
    cache.put(memo_key(ORG, "ranks"), Memo(1, "ranks", 3_000))
    assert cache.get(body_key) is None  # the least recent went
    assert cache.memo(memo_key(ORG, "tree")) is not None
    assert cache.bytes <= cache.max_bytes
    assert cache.get(memo_key(ORG, "tree")) is None  # a memo is never a request's answer


def test_a_memo_over_half_the_bound_is_not_kept() -> None:
    cache = ByteLRU(10_000)
    assert not cache.put(memo_key(ORG, "ranks"), Memo(1, "ranks", 5_001))
    assert cache.put(memo_key(ORG, "ranks"), Memo(1, "ranks", 5_000))
    assert cache.bytes == 5_000


def test_dropping_the_bodies_keeps_the_memos() -> None:
    cache = ByteLRU(10_000)
    cache.put(memo_key(ORG, "tree"), Memo(1, "tree", 100))
    cache.put((ORG, "member", "/team", b"", b""), Entry(1, b"y", '"2"'))
    cache.drop_bodies()
    assert len(cache) == 1
    assert cache.memos() == [memo_key(ORG, "tree")]


async def test_the_read_model_keeps_a_memo_per_version_within_its_bound(
    app_state: AppHarness,
) -> None:
    readmodel: ReadModel = app_state.readmodel
    builds: list[int] = []

    async def build() -> list[int]:
        builds.append(1)
        return list(range(100))

    first = await readmodel.memo(ORG, "numbers", 3, build)
    assert await readmodel.memo(ORG, "numbers", 3, build) is first
    assert len(builds) == 1
    assert readmodel.memo_at(ORG, "numbers", 3) is first
    assert readmodel.memo_at(ORG, "numbers", 4) is None
    kept = readmodel.cache.memo(memo_key(ORG, "numbers"))
    assert kept is not None
    assert kept.size == footprint(first) > 100 * 28
    await readmodel.memo(ORG, "numbers", 4, build)
    assert len(builds) == 2


def test_the_order_memo_finds_every_team_and_no_other() -> None:
    rng = random.Random(5)
    ids = sorted(uuid.UUID(int=rng.getrandbits(128)).bytes for _ in range(5_000))
    places = list(range(len(ids)))
    rng.shuffle(places)
    ranks = Ranks.of(b"".join(ids), array.array("i", places))
    assert all(ranks.position(team) == place for team, place in zip(ids, places, strict=True))
    assert ranks.position(uuid.uuid4().bytes) is None
    assert ranks.position(b"\x00" * 16) is None
    assert ranks.position(b"\xff" * 16) is None
    assert ranks.memo_bytes <= RANK_BYTES * len(ids) + 300
    assert not ranks.counted_in_sql
    assert Ranks().counted_in_sql


def test_the_order_memo_tells_apart_ids_that_share_their_first_half() -> None:
    shared = b"\x12" * 8
    ids = sorted([shared + bytes([n]) * 8 for n in (3, 1, 2)] + [b"\x13" * 16, b"\x01" * 16])
    ranks = Ranks.of(b"".join(ids), array.array("i", [4, 3, 2, 1, 0]))
    assert [ranks.position(team) for team in ids] == [4, 3, 2, 1, 0]
    assert ranks.position(shared + b"\x04" * 8) is None


async def test_requests_that_miss_a_memo_together_build_it_once(app_state: AppHarness) -> None:
    """After a write, every overview of a large organization misses its order at once:
    one builds it (a statement over all its teams), the others wait for that one."""
    readmodel, org = app_state.readmodel, uuid.uuid4()
    release, builds = anyio.Event(), []

    async def build() -> list[int]:
        builds.append(1)
        await release.wait()
        return [len(builds)]

    async def ask(into: list[Any]) -> None:
        into.append(await readmodel.memo(org, "order", 3, build))

    got: list[Any] = []
    async with anyio.create_task_group() as group:
        for _ in range(10):
            group.start_soon(ask, got)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert builds == [1]
    assert got == [[1]] * 10
    assert all(value is got[0] for value in got)
    assert readmodel.memo_at(org, "order", 3) is got[0]
    assert readmodel.memo_at(org, "order", 4) is None  # kept at its version only


async def test_a_memo_whose_builder_was_cancelled_is_built_by_a_waiter(
    app_state: AppHarness,
) -> None:
    readmodel, org = app_state.readmodel, uuid.uuid4()
    started, builds = anyio.Event(), []

    async def stuck() -> str:
        builds.append("stuck")
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def quick() -> str:
        builds.append("quick")
        return "built"

    got: list[str] = []
    first = anyio.CancelScope()

    async def build_first() -> None:
        with first:
            await readmodel.memo(org, "order", 1, stuck)

    async def wait_for_it() -> None:
        got.append(await readmodel.memo(org, "order", 1, quick))

    async with anyio.create_task_group() as group:
        group.start_soon(build_first)
        await started.wait()
        group.start_soon(wait_for_it)
        await anyio.wait_all_tasks_blocked()
        first.cancel()  # the first request goes away mid-build
    assert builds == ["stuck", "quick"]
    assert got == ["built"]
    assert readmodel.memo_at(org, "order", 1) == "built"


def test_the_order_read_from_sqlite_is_put_in_id_order_if_it_came_otherwise() -> None:
    """SQLite does not promise an aggregate the order of the subquery below it; the
    order memo bisects ids in bytes' order, so what arrives unsorted is sorted with its
    places (``rank_memo._unpacked``)."""
    low, high = uuid.UUID(int=1), uuid.UUID(int=2**127)
    ids, places = rank_memo._unpacked("sqlite", high.hex + low.hex, "0,1")
    ranks = Ranks.of(ids, places)
    assert (ranks.position(low.bytes), ranks.position(high.bytes)) == (1, 0)
    ids, places = rank_memo._unpacked("sqlite", low.hex + high.hex, "1,0")
    assert (ids, list(places)) == (low.bytes + high.bytes, [1, 0])

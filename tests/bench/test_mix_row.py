"""bench.harness: readers on the board while teams complete tasks — the mix's reads a
second against the same read's alone, in the same run, with the issue's goal."""

from __future__ import annotations

from bench.harness import report
from bench.harness.measure import RowResult, _mix_ratio
from bench.harness.rows import MIX, MIX_READ, ROWS

from tests.bench.test_learner_rows import _result


def test_the_mix_row_reads_six_times_per_write_with_its_goal() -> None:
    row = next(r for r in ROWS if r.name == MIX)
    assert (row.reads_per_write, row.read_after, row.mix_goal) == (6, "/leaderboard?limit=50", 0.5)
    assert MIX_READ in {r.name for r in ROWS}


def test_the_reads_share_counts_only_the_mix_reads() -> None:
    row = next(r for r in ROWS if r.name == MIX)
    alone = RowResult(name=MIX_READ, status="ok", rps=1_000)
    mixed = RowResult(name=MIX, status="ok", rps=700)
    # 700 requests a second, six in seven of them reads: 600 reads against 1,000 alone.
    assert _mix_ratio(row, mixed, [alone, mixed]) == 0.6
    assert _mix_ratio(row, mixed, [mixed]) is None
    assert _mix_ratio(None, mixed, [alone, mixed]) is None


def test_the_goal_is_reported() -> None:
    result = _result()
    result["runs"][0]["rows"].append(
        RowResult(name=MIX, status="ok", rps=350, mix_ratio=0.3).as_json()
    )
    goals = report.goals(result)
    found = next(g for g in goals if g["goal"].startswith(MIX))
    assert (found["value"], found["met"]) == (0.3, False)

"""bench.platform: only a run of every stage at the preset's sizes is the one
BENCHMARKS.md shows (``full`` or ``quick``); any other is ``partial``."""

from __future__ import annotations

import pytest
from bench.platform import report
from bench.platform.run import parse_args


@pytest.mark.parametrize(
    ("argv", "mode"),
    [
        ([], "full"),
        (["--quick"], "quick"),
        (["--quick", "--backend", "postgresql"], "quick"),
        (["--skip-streams"], "partial"),
        (["--quick", "--skip-huge"], "partial"),
        (["--huge-only"], "partial"),
        (["--quick", "--streams", "10"], "partial"),
        (["--teams", "2000"], "partial"),
        (["--huge-sizes", "1000,2000"], "partial"),
    ],
)
def test_a_run_that_leaves_a_stage_out_is_partial(argv: list[str], mode: str) -> None:
    assert parse_args(argv).mode == mode


@pytest.mark.parametrize(("kib", "met"), [(18.9, True), (42.6, False), (-12.2, None), (0.0, None)])
def test_memory_a_stream_that_fell_while_they_opened_is_not_measured(
    kib: float, met: bool | None
) -> None:
    """A worker's resident memory can fall while streams open (pages the traffic freed
    given back): no figure about the streams, not a goal met."""
    mixed = {"name": "mixed", "of_bare": 0.1, "p50_ms": 10.0, "p99_ms": 50.0}
    result = {
        "traffic": [{**mixed, "connections": 16}, {**mixed, "connections": 256}],
        "streams": {"kib_per_stream": kib},
    }
    found = [g for g in report.goals(result) if "memory per open stream" in g["goal"]]
    assert [(g["value"], g["met"]) for g in found] == [(kib, met)]

"""bench.platform: only a run of every stage at the preset's sizes is the one
BENCHMARKS.md shows (``full`` or ``quick``); any other is ``partial``."""

from __future__ import annotations

import pytest
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

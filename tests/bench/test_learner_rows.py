"""bench.harness: the learners' writes are measured against the progress write of the
same run, reported with their goals (the text table, the goals, BENCHMARKS.md)."""

from __future__ import annotations

from typing import Any

from bench.harness import markdown, report
from bench.harness.loadgen import LoadSettings
from bench.harness.measure import RowResult
from bench.harness.rows import PROGRESS_WRITE, ROWS
from bench.run import chosen, parse_args

WRONG = "POST /team/{id}/attempts (wrong)"
RIGHT = "POST /team/{id}/attempts (right) + DELETE …/progress/{taskId}"
HINT = "POST /team/{id}/hints (first unlock)"


def _row(name: str, rps: float, progress_cost: float | None = None) -> dict[str, Any]:
    return RowResult(
        name=name, status="ok", rps=rps, p50_ms=1, p90_ms=1, p99_ms=1, progress_cost=progress_cost
    ).as_json()


def _result() -> dict[str, Any]:
    rows = [
        _row(PROGRESS_WRITE, 300),
        _row(WRONG, 400, 0.75),
        _row(RIGHT, 200, 1.5),
        _row(HINT, 100, 3.0),
    ]
    return report.build(
        backend="sqlite",
        mode="quick",
        command="bench",
        machine={
            "nproc": 2,
            "memory_gib": 1,
            "cpu": "x",
            "kernel": "k",
            "python": "3",
            "sqlite": "3",
            "wrk": "wrk",
            "loadavg_at_start": [0.0, 0.0, 0.0],
        },
        load=LoadSettings(threads=1, connections=16, duration_s=3, warmup_s=1),
        workers=1,
        runs=[{"teams": 1_000, "workers": 1, "rows": rows}],
    )


def test_the_rows_exist_with_the_issues_goals() -> None:
    goals = {row.name: row.progress_goal for row in ROWS if row.learner}
    assert goals == {WRONG: 1.0, RIGHT: 1.2, HINT: None}
    # --only of the learners selects them (the runner adds the progress write).
    assert [r.name for r in ROWS if chosen("attempts|hints", r.name)] == [WRONG, RIGHT, HINT]
    assert parse_args(["--only", "attempts|hints"]).only == "attempts|hints"


def test_goals_compare_the_cost_with_the_progress_write() -> None:
    result = _result()
    found = {g["goal"]: g for g in result["goals"] if "progress write's cost" in g["goal"]}
    wrong = found[f"{WRONG}: ≤ 1x a progress write's cost"]
    right = found[f"{RIGHT}: ≤ 1.2x a progress write's cost"]
    assert (wrong["value"], wrong["met"]) == (0.75, True)
    assert (right["value"], right["met"]) == (1.5, False)
    assert len(found) == 2  # the hint has no goal
    text = report.text_table(result)
    assert f"costs 3.00x {PROGRESS_WRITE}" in text
    assert "goal MISSED: " + RIGHT in text


def test_benchmarks_md_shows_the_rows_and_goals() -> None:
    rendered = markdown.render({"sqlite": _result()})
    assert "### Learners' writes" in rendered
    assert f"| SQLite | 1,000 | `{WRONG}` | 400 | 0.75 | ≤ 1 |" in rendered
    assert f"| SQLite | 1,000 | `{RIGHT}` | 200 | 1.50 | ≤ 1.2 |" in rendered
    assert f"| SQLite | 1,000 | `{HINT}` | 100 | 3.00 | - |" in rendered
    assert f"| {RIGHT}: ≤ 1.2x a progress write's cost | 1.5 (at 1,000 teams): **no** |" in rendered

"""BENCHMARKS.md's goals tables: a rule stated for several reads is one row, its worst."""

from __future__ import annotations

from typing import Any

from bench.harness.report import goals_table


def _goal(goal: str, value: float, met: bool | None) -> dict[str, Any]:
    return {"goal": goal, "value": value, "met": met}


def _table(goals: dict[str, list[dict[str, Any]]]) -> list[str]:
    results = {backend: {"goals": found} for backend, found in goals.items()}
    text = goals_table("### Goals", results, list(goals), lambda goal: str(goal["value"]))
    return text.splitlines()[4:]


def test_a_rule_for_several_reads_is_one_row_with_its_worst_read() -> None:
    rows = _table(
        {
            "sqlite": [
                _goal("GET /a: p50 slope ≤ 2", 1.5, True),
                _goal("GET /b?season= (frozen: a member): p50 slope ≤ 2", 2.5, False),
                _goal("GET /c: p50 slope ≤ 2", 0.5, True),
                _goal("GET /a: ≥ 60% of bare req/s", 0.7, True),
                _goal("GET /c: ≥ 60% of bare req/s", 0.9, True),
                _goal("no 5xx in the traffic", 0, True),
            ],
            "postgresql": [
                _goal("GET /a: p50 slope ≤ 2", 1.9, True),
                _goal("GET /c: p50 slope ≤ 2", 1.2, True),
            ],
        }
    )
    assert rows == [
        "| each of 3 reads: p50 slope ≤ 2 | worst 2.5, GET /b?season= (frozen: a member): "
        "**no** (1 of 3) | worst 1.9, GET /a: yes |",
        "| GET /a and GET /c: ≥ 60% of bare req/s | worst 0.7, GET /a: yes | - |",
        "| no 5xx in the traffic | 0: yes | - |",
    ]


def test_a_prefix_stays_with_its_rule() -> None:
    rows = _table(
        {
            "sqlite": [
                _goal("cold GET /a: ≤ 3 statements", 1, True),
                _goal("cold GET /b: ≤ 3 statements", 2, True),
                _goal("cold GET /c: ≤ 3 statements", 4, False),
                _goal("one organization, GET /a: p50 slope 1 → 10 teams ≤ 2", 1.1, None),
            ]
        }
    )
    assert rows == [
        "| cold, each of 3 reads: ≤ 3 statements | worst 4, GET /c: **no** (1 of 3) |",
        "| one organization, GET /a: p50 slope 1 → 10 teams ≤ 2 | 1.1: not measured |",
    ]

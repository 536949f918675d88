"""BENCHMARKS.md: its generated part, from the latest result of each backend and of the
command line's start (``harness/cli_startup.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.harness import cli_startup
from bench.harness.report import (
    BEGIN,
    END,
    LABELS,
    RESULTS_DIR,
    ROOT,
    default_runs,
    fmt,
    goals_table,
    row_cells,
)
from bench.harness.rows import PROGRESS_WRITE, ROWS

ORDER = ["sqlite", "postgresql"]


def render(results: dict[str, dict[str, Any]], cli: dict[str, Any] | None = None) -> str:
    if not results and cli is None:
        return "_No results yet: run `make bench`._"
    present = [b for b in ORDER if b in results]
    parts = [_summary(results, present)]
    for backend in present:
        parts.append(_backend_table(results[backend]))
    if present:
        parts.append(_learners(results, present))
        parts.append(_slopes(results, present))
        parts.append(_goals(results, present))
    if "postgresql" in results:
        parts.append(_workers(results["postgresql"]))
    parts.append(cli_startup.markdown(cli))
    if present:
        parts.append(_machine(results, present))
    return "\n\n".join(p for p in parts if p)


def _summary(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    lines = []
    for backend in present:
        r = results[backend]
        sizes = ", ".join(f"{run['teams']:,}" for run in default_runs(r))
        lines.append(
            f"- **{LABELS[backend]}**: {r['mode']} run of {r['finished_at']}, "
            f"{r['workers']} worker process(es), {sizes} teams; "
            f"wrk {r['load']['threads']} thread(s), {r['load']['connections']} connections, "
            f"{r['load']['duration_s']:g} s a row after {r['load']['warmup_s']:g} s of warm-up."
        )
    return "\n".join(lines)


def _backend_table(result: dict[str, Any]) -> str:
    lines = [
        f"### {LABELS[result['backend']]}",
        "",
        "| Teams | Endpoint | req/s | p50 ms | p99 ms | of bare | of floor | load | "
        "statements (miss / hit) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in default_runs(result):
        history = "" if run.get("history_seeded", True) else " (no history)"
        for row in run["rows"]:
            load = fmt(row.get("loadavg"), ".1f")
            cells = [*row_cells(row), load, row.get("statements", "")]
            lines.append(
                f"| {run['teams']:,}{history} | `{row['name']}` | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def _learners(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    """The learners' writes as multiples of the admin's progress write of the same run
    (requests/s of ``PROGRESS_WRITE`` over the row's), with their goals."""
    goals = {row.name: row.progress_goal for row in ROWS if row.learner}
    lines = [
        "### Learners' writes: cost ÷ a progress write's",
        "",
        f"Each as a multiple of `{PROGRESS_WRITE}` in the same run (its requests/s over",
        "the row's; both rows alternate a write with the admin's withdrawal but the wrong",
        "answer and the hint).",
        "",
        "| Backend | Teams | Endpoint | req/s | x progress write | goal |",
        "|---|---:|---|---:|---:|---:|",
    ]
    found = False
    for backend in present:
        for run in default_runs(results[backend]):
            for row in run["rows"]:
                if row["name"] not in goals:
                    continue
                found = True
                goal = goals[row["name"]]
                lines.append(
                    f"| {LABELS[backend]} | {run['teams']:,} | `{row['name']}` | "
                    f"{fmt(row.get('rps'), ',.0f')} | {fmt(row.get('progress_cost'), '.2f')} | "
                    f"{'-' if goal is None else f'≤ {goal:g}'} |"
                )
    return "\n".join(lines) if found else ""


def _slopes(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    names: list[str] = []
    for backend in present:
        names += [n for n in results[backend]["slopes"] if n not in names]
    if not names:
        return "### Scale slope\n\n_Needs a full run (1,000 and 100,000 teams)._"
    header = " | ".join(f"{LABELS[b]} | ÷ drift" for b in present)
    lines = [
        "### Scale slope: p50 at 100,000 teams ÷ p50 at 1,000 teams",
        "",
        "The bare endpoint does the same work at every size, so its requests/s at 1,000",
        "teams over those at 100,000 measure how much the shared machine slowed down in",
        "between (**drift**); **÷ drift** is the slope with that taken out.",
        "",
        f"| Endpoint | {header} |",
        "|---|" + "---:|---:|" * len(present),
    ]
    for name in names:
        cells = []
        for b in present:
            value = results[b]["slopes"].get(name)
            drift = results[b].get("bare_drift")
            cells.append(fmt(value, ".2f"))
            cells.append(fmt(value / drift if value and drift else None, ".2f"))
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    drifts = ", ".join(f"{LABELS[b]} {fmt(results[b].get('bare_drift'), '.2f')}" for b in present)
    lines += ["", f"Drift: {drifts}."]
    return "\n".join(lines)


def _goals(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    return goals_table("### Goals", results, present, _goal_value)


def _goal_value(goal: dict[str, Any]) -> str:
    value = goal["value"]
    where = f" (at {goal['at_teams']:,} teams)" if goal.get("at_teams") else ""
    shown = "-" if value is None else f"{value}{where}"
    if goal.get("adjusted") is not None:
        shown += f" (÷ drift: {goal['adjusted']})"
    return shown


def _workers(result: dict[str, Any]) -> str:
    by_workers: dict[int, dict[str, Any]] = {}
    teams = None
    for run in result["runs"]:
        if run["workers"] == 1:
            teams = run["teams"]
    if teams is None:
        return ""
    for run in result["runs"]:
        if run["teams"] == teams:
            by_workers[run["workers"]] = {row["name"]: row for row in run["rows"]}
    one, two = by_workers.get(1, {}), by_workers.get(2, {})
    lines = [
        f"### PostgreSQL: 1 and 2 worker processes ({teams:,} teams)",
        "",
        "| Endpoint | 1 worker req/s | 2 workers req/s | 2 ÷ 1 |",
        "|---|---:|---:|---:|",
    ]
    for name, row in one.items():
        other = two.get(name, {})
        a, b = row.get("rps"), other.get("rps")
        gain = fmt(b / a if a and b else None, ".2f")
        lines.append(f"| `{name}` | {fmt(a, ',.0f')} | {fmt(b, ',.0f')} | {gain} |")
    return "\n".join(lines)


def _machine(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    first = results[present[0]]["machine"]
    pg = results.get("postgresql", {}).get("machine", {}).get("postgresql", "-")
    loads = ", ".join(
        f"{LABELS[b]} run started at load {results[b]['machine']['loadavg_at_start'][0]}"
        for b in present
    )
    commands = "\n".join(f"    {results[b]['command']}" for b in present)
    return "\n".join(
        [
            "### Machine and command",
            "",
            f"- `nproc` {first['nproc']}, memory {first['memory_gib']} GiB, {first['cpu']}, "
            f"Linux {first['kernel']}",
            f"- Python {first['python']}, {pg}, SQLite {first['sqlite']}, {first['wrk']}",
            f"- {loads} (1-minute load average; each row records its own).",
            "",
            "Commands:",
            "",
            commands,
        ]
    )


def latest(directory: Path) -> dict[str, dict[str, Any]]:
    """The newest full result per backend, else the newest quick one."""
    chosen: dict[str, dict[str, Any]] = {}
    for path in directory.glob("*.json"):
        result = json.loads(path.read_text())
        # probes/servers.py, scaleout.py and the command line's start have no backend;
        # the platform run (bench/platform) has its own kind and section
        if "mode" not in result or "backend" not in result or "kind" in result:
            continue
        backend = result["backend"]
        key = (result["mode"] == "full", result["finished_at"])
        current = chosen.get(backend)
        if current is None or key > (current["mode"] == "full", current["finished_at"]):
            chosen[backend] = result
    return chosen


def write_markdown(path: Path, directory: Path) -> None:
    generated = render(latest(directory), cli_startup.latest(directory))
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{generated}\n{END}{tail}")


if __name__ == "__main__":  # python -m bench.harness.markdown: re-render BENCHMARKS.md
    write_markdown(ROOT / "BENCHMARKS.md", RESULTS_DIR)

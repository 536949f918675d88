"""Results: the JSON files, the printed table and the goals (BENCHMARKS.md: harness/markdown.py)."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.loadgen import LoadSettings
from bench.harness.rows import BARE, MIX_READ, PROGRESS_WRITE, ROWS

ROOT = Path(__file__).resolve().parents[2]
"""The repository (``bench/`` sits beside ``src/``)."""
RESULTS_DIR = ROOT / "bench" / "results"
BEGIN, END = "<!-- bench:begin (written by bench/run.py) -->", "<!-- bench:end -->"
SLOPE_LIMIT = 2.0
LABELS = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


def machine(wrk: str) -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    mem_kib = next((int(x.split()[1]) for x in meminfo.splitlines() if x.startswith("MemTotal")), 0)
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    cpu = next((x.split(":", 1)[1].strip() for x in cpuinfo.splitlines() if "model name" in x), "")
    return {
        "nproc": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "cpu": cpu or platform.processor(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "wrk": wrk,
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def command(argv: list[str]) -> str:
    return " ".join([".venv/bin/python -m bench.run", *argv[1:]])


def default_runs(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs with the backend's usual number of workers (not the comparison run)."""
    workers = result["workers"]
    return [run for run in result["runs"] if run["workers"] == workers]


def _rows_by_size(result: dict[str, Any]) -> dict[int, dict[str, dict[str, Any]]]:
    return {run["teams"]: {row["name"]: row for row in run["rows"]} for run in default_runs(result)}


def slopes(result: dict[str, Any]) -> dict[str, float]:
    """p50 at the largest size over p50 at the smallest (1.0: size does not matter)."""
    by_size = _rows_by_size(result)
    if len(by_size) < 2:
        return {}
    small, large = by_size[min(by_size)], by_size[max(by_size)]
    out = {}
    for name, row in large.items():
        base = small.get(name)
        if base and base.get("p50_ms") and row.get("p50_ms"):
            out[name] = round(row["p50_ms"] / base["p50_ms"], 2)
    return out


def drift(result: dict[str, Any]) -> float | None:
    """How much slower the machine was at the largest size than at the smallest, seen on
    the bare endpoint (which does the same work at every size): the ratio of its
    requests/s, both measurements of each size averaged."""
    by_size = _rows_by_size(result)
    if len(by_size) < 2:
        return None

    def bare_rps(rows: dict[str, dict[str, Any]]) -> float | None:
        found = [r["rps"] for n, r in rows.items() if n.startswith(BARE.name) and r.get("rps")]
        return sum(found) / len(found) if found else None

    small, large = bare_rps(by_size[min(by_size)]), bare_rps(by_size[max(by_size)])
    return round(small / large, 2) if small and large else None


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    slope = result.get("slopes", {})
    machine_drift = result.get("bare_drift")
    by_size = _rows_by_size(result)
    for row in ROWS:
        if row.slope_goal:
            value = slope.get(row.name)
            adjusted = round(value / machine_drift, 2) if value and machine_drift else None
            out.append(
                {
                    "goal": f"{row.name}: p50 slope ≤ {SLOPE_LIMIT:g}",
                    "value": value,
                    "adjusted": adjusted,
                    "met": None if value is None else value <= SLOPE_LIMIT,
                }
            )
        if row.ratio_goal is not None:
            goal = f"{row.name}: ≥ {row.ratio_goal:.0%} of bare req/s"
            out.append(_worst_size(goal, by_size, row.name, "ratio", row.ratio_goal, at_least=True))
        if row.progress_goal is not None:
            goal = f"{row.name}: ≤ {row.progress_goal:g}x a progress write's cost"
            out.append(
                _worst_size(
                    goal, by_size, row.name, "progress_cost", row.progress_goal, at_least=False
                )
            )
        if row.mix_goal is not None:
            goal = f"{row.name}: reads ≥ {row.mix_goal:.0%} of {MIX_READ}'s req/s alone"
            out.append(
                _worst_size(goal, by_size, row.name, "mix_ratio", row.mix_goal, at_least=True)
            )
        if row.floor_goal is not None:
            goal = f"{row.name}: ≥ {row.floor_goal:.0%} of the floor's req/s"
            out.append(
                _worst_size(goal, by_size, row.name, "floor_ratio", row.floor_goal, at_least=True)
            )
    return out


def _worst_size(
    goal: str,
    by_size: dict[int, dict[str, dict[str, Any]]],
    name: str,
    field: str,
    limit: float,
    *,
    at_least: bool,
) -> dict[str, Any]:
    """A goal judged at the team count where the row does worst: its lowest ``field`` for
    an at-least goal, its highest for an at-most one."""
    found = [
        (teams, rows[name][field])
        for teams, rows in sorted(by_size.items())
        if rows.get(name, {}).get(field) is not None
    ]
    worst = (min if at_least else max)(found, key=lambda x: x[1]) if found else None
    met = None
    if worst is not None:
        met = worst[1] >= limit if at_least else worst[1] <= limit
    return {
        "goal": goal,
        "value": worst[1] if worst else None,
        "at_teams": worst[0] if worst else None,
        "met": met,
    }


def build(
    *,
    backend: str,
    mode: str,
    command: str,
    machine: dict[str, Any],
    load: LoadSettings,
    workers: int,
    runs: list[dict[str, Any]],
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "backend": backend,
        "mode": mode,
        "workers": workers,
        "command": command,
        "machine": machine,
        "load": asdict(load),
        "bare_endpoint": BARE.name,
        "runs": runs,
    }
    result["bare_drift"] = drift(result)
    result["slopes"] = slopes(result)
    result["goals"] = goals(result)
    return result


def save(result: dict[str, Any], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    suffix = "" if result["mode"] == "full" else f"-{result['mode']}"
    path = directory / f"{result['date']}-{result['backend']}{suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


def row_cells(row: dict[str, Any]) -> list[str]:
    if row["status"] == "skipped":
        return ["not built yet", "", "", "", ""]
    if row.get("rps") is None:
        return [f"failed: {row['reason'][:60]}", "", "", "", ""]
    cells = [
        fmt(row["rps"], ",.0f"),
        fmt(row["p50_ms"], ".1f"),
        fmt(row["p99_ms"], ".1f"),
        fmt(row.get("ratio"), ".2f"),
        fmt(row.get("floor_ratio"), ".2f"),
    ]
    if row["status"] != "ok":
        cells[0] += f" ⚠ {row['reason']}"
    return cells


def text_table(result: dict[str, Any]) -> str:
    lines = [
        f"\n{LABELS[result['backend']]} ({result['mode']} run, {result['workers']} worker(s))",
        f"{'teams':>8}  {'endpoint':<46} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'x bare':>7}"
        f" {'x floor':>7}",
    ]
    for teams, rows in sorted(_rows_by_size(result).items()):
        for name, row in rows.items():
            cells = row_cells(row)
            lines.append(
                f"{teams:>8,}  {name:<46} {cells[0]:>9} {cells[1]:>8} {cells[2]:>8} {cells[3]:>7}"
                f" {cells[4]:>7}"
            )
    for teams, rows in sorted(_rows_by_size(result).items()):
        for name, row in rows.items():
            if row.get("progress_cost") is not None:
                lines.append(
                    f"{teams:>8,}  {name:<46} costs {row['progress_cost']:.2f}x {PROGRESS_WRITE}"
                )
            if row.get("mix_ratio") is not None:
                lines.append(
                    f"{teams:>8,}  {name:<46} reads {row['mix_ratio']:.3f}x {MIX_READ} alone"
                )
    if result["slopes"]:
        lines.append("slope (p50 at largest / p50 at smallest size):")
        lines += [f"  {name:<46} {value:.2f}" for name, value in result["slopes"].items()]
    for goal in result["goals"]:
        met = {True: "met", False: "MISSED", None: "n/a"}[goal["met"]]
        lines.append(f"goal {met:>6}: {goal['goal']} (value {goal['value']})")
    return "\n".join(lines)


MET = {True: "yes", False: "**no**", None: "not measured"}


READ_GOAL = re.compile(
    r"^(?P<before>.*?)(?P<read>(?:GET|POST|PUT|PATCH|DELETE) .+): (?P<rule>[^:]+)$"
)
"""A goal about one read: ``[prefix]<METHOD> <path> [(variant)]: <rule>`` (a variant may
hold a colon; a rule does not)."""


@dataclass
class _Family:
    """The goals that state one rule for several reads (one row in the table)."""

    rule: str
    reads: list[str] = field(default_factory=list)
    goals: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)


def _leading_number(text: str) -> float | None:
    found = re.match(r"-?\d+(?:\.\d+)?", text.replace(",", ""))
    return float(found.group()) if found else None


def _worst(rule: str, goals: list[tuple[str, dict[str, Any]]], shown: Callable[..., str]) -> str:
    """One backend's cell of a family: every goal met, or how many missed; and the worst
    read's value (the largest for a ``≤`` rule, the smallest for a ``≥`` one)."""
    numbered = [(_leading_number(shown(goal)), read, goal) for read, goal in goals]
    if any(number is None for number, _, _ in numbered):
        worst_read, worst_goal = next(((r, g) for r, g in goals if g["met"] is False), goals[0])
    else:
        pick = max if "≤" in rule else min
        _, worst_read, worst_goal = pick(numbered, key=lambda item: item[0] or 0.0)
    missed = sum(goal["met"] is False for _, goal in goals)
    unmeasured = all(goal["met"] is None for _, goal in goals)
    verdict = (
        MET[None]
        if unmeasured
        else MET[True]
        if not missed
        else f"{MET[False]} ({missed} of {len(goals)})"
    )
    return f"worst {shown(worst_goal)}, {worst_read}: {verdict}"


def goals_table(
    heading: str,
    results: dict[str, dict[str, Any]],
    present: list[str],
    shown: Callable[[dict[str, Any]], str],
) -> str:
    """The goals of a report: one row a goal, one column a backend (the value, then
    whether it is met), so that a goal's two backends read side by side. A rule stated
    for several reads is one row (its worst read; the tables above have every read)."""
    families: dict[str, _Family] = {}
    for backend in present:
        for goal in results[backend]["goals"]:
            matched = READ_GOAL.match(goal["goal"])
            key = f"{matched['before']}{{read}}: {matched['rule']}" if matched else goal["goal"]
            read = matched["read"] if matched else ""
            family = families.setdefault(key, _Family(rule=key))
            if read not in family.reads:
                family.reads.append(read)
            family.goals.setdefault(backend, []).append((read, goal))
    lines = [
        heading,
        "",
        "| Goal | " + " | ".join(LABELS[b] for b in present) + " |",
        "|---|" + "---|" * len(present),
    ]
    for key, family in families.items():
        if len(family.reads) == 1:
            name = key.replace("{read}", family.reads[0])
            cells = [
                f"{shown(found[0][1])}: {MET[found[0][1]['met']]}"
                if (found := family.goals.get(b))
                else "-"
                for b in present
            ]
        else:
            before = key.split("{read}")[0]
            many = len(family.reads) > 2
            each = f"each of {len(family.reads)} reads" if many else " and ".join(family.reads)
            name = key.replace(
                f"{before}{{read}}",
                f"{before.rstrip(', ')}, {each}" if before.strip() else each,
            )
            cells = [
                _worst(key, found, shown) if (found := family.goals.get(b)) else "-"
                for b in present
            ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)

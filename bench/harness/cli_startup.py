"""The command line's start: the wall time of ``questline --version``, ``questline token
create`` and ``questline signin-link`` beside ``python -c pass`` (the interpreter alone).

Each command runs as users run it: the installed ``questline`` script, a fresh
interpreter every time, on a throwaway SQLite data directory (migrated and warmed up
first, untimed). The runs go round-robin over the commands, so drift in the shared
machine's load falls on all of them alike; a command's figure is the median of its runs,
and **over python** is that median less the interpreter's. Once per command a run with
``-X importtime`` records which of the heavy packages it loaded (tests/cli/test_startup.py
asserts the same).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAME = "command line start"
"""The row's name (``--only`` matches it like the endpoints' names)."""
ORG = "00000000-0000-0000-0000-0000000000b1"
HEAVY = ("fastapi", "sqlalchemy.orm", "httpx", "alembic")
"""Packages a fast start does without (the column ``loads``)."""


def _questline() -> str:
    """The installed script, beside the interpreter (``.venv/bin/questline``)."""
    return str(Path(sys.executable).with_name("questline"))


def _commands() -> list[tuple[str, list[str]]]:
    python, questline = sys.executable, _questline()
    return [
        ("python -c pass", [python, "-c", "pass"]),
        ("questline --version", [questline, "--version"]),
        (
            "questline token create --org <uuid> --role member",
            [questline, "token", "create", "--org", ORG, "--role", "member"],
        ),
        ("questline signin-link --org <uuid>", [questline, "signin-link", "--org", ORG]),
    ]


def _loaded(argv: list[str], env: dict[str, str]) -> list[str]:
    """Which of ``HEAVY`` the command imports (one run with ``-X importtime``)."""
    if argv[0] == sys.executable:
        return []
    module_argv = [sys.executable, "-X", "importtime", "-m", "questline.cli.main", *argv[1:]]
    done = subprocess.run(module_argv, env=env, capture_output=True, text=True, check=True)
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return [package for package in HEAVY if package in names]


def measure(runs: int) -> dict[str, Any]:
    """Time each command ``runs`` times; the figures as a result of its own."""
    commands = _commands()
    times: dict[str, list[float]] = {name: [] for name, _ in commands}
    with tempfile.TemporaryDirectory(prefix="questline-bench-cli-") as data_dir:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "QUESTLINE_DATA_DIR": data_dir}
        upgrade = [_questline(), "db", "upgrade"]
        subprocess.run(upgrade, env=env, check=True, stdout=subprocess.DEVNULL)
        loaded = {name: _loaded(argv, env) for name, argv in commands}  # also the warm-up
        for _ in range(runs):
            for name, argv in commands:
                started = time.perf_counter()
                subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - started)
    base = statistics.median(times[commands[0][0]])
    rows = []
    for name, _ in commands:
        median = statistics.median(times[name])
        rows.append(
            {
                "command": name,
                "median_ms": round(median * 1000, 1),
                "min_ms": round(min(times[name]) * 1000, 1),
                "max_ms": round(max(times[name]) * 1000, 1),
                "over_python_ms": round((median - base) * 1000, 1),
                "loads": loaded[name],
            }
        )
    return {"kind": "cli", "runs": runs, "rows": rows}


def build(measured: dict[str, Any], *, mode: str, command: str) -> dict[str, Any]:
    return {
        **measured,
        "date": dt.date.today().isoformat(),
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "mode": mode,
        "command": command,
        "python": sys.version.split()[0],
        "nproc": os.cpu_count(),
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def save(result: dict[str, Any], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    suffix = "" if result["mode"] == "full" else f"-{result['mode']}"
    path = directory / f"{result['date']}-cli{suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def latest(directory: Path) -> dict[str, Any] | None:
    """The newest full result, else the newest of any mode."""
    chosen: dict[str, Any] | None = None
    for path in directory.glob("*-cli*.json"):
        result = json.loads(path.read_text())
        if result.get("kind") != "cli":
            continue
        key = (result["mode"] == "full", result["finished_at"])
        if chosen is None or key > (chosen["mode"] == "full", chosen["finished_at"]):
            chosen = result
    return chosen


def _loads(row: dict[str, Any]) -> str:
    return ", ".join(row["loads"]) or "-"


def text_table(result: dict[str, Any]) -> str:
    lines = [
        f"\n{NAME}: median of {result['runs']} runs",
        f"{'command':<52} {'median ms':>9} {'over python':>11}  loads",
    ]
    for row in result["rows"]:
        lines.append(
            f"{row['command']:<52} {row['median_ms']:>9.1f} {row['over_python_ms']:>11.1f}"
            f"  {_loads(row)}"
        )
    return "\n".join(lines)


def markdown(result: dict[str, Any] | None) -> str:
    if result is None:
        return ""
    lines = [
        "### Command line start",
        "",
        f"Wall time of a command, the median of {result['runs']} runs of each "
        f"({result['mode']} run of {result['finished_at']}, 1-minute load average "
        f"{result['loadavg_at_end'][0]} at its end); **over python** is that less "
        "`python -c pass`; **loads** names the heavy packages the command imports.",
        "",
        "| Command | median ms | min ms | over python ms | loads |",
        "|---|---:|---:|---:|---|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| `{row['command']}` | {row['median_ms']:.1f} | {row['min_ms']:.1f} | "
            f"{row['over_python_ms']:.1f} | {_loads(row)} |"
        )
    return "\n".join(lines)

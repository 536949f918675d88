"""The platform run's results: JSON (bench/results/<date>-platform-<backend>[-quick].json),
the goals, the printed summary and BENCHMARKS.md's platform section (between its own
markers, beside the section bench/run.py writes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.harness.report import LABELS, fmt, goals_table
from bench.platform import huge

BEGIN = "<!-- bench-platform:begin (written by bench/platform) -->"
END = "<!-- bench-platform:end -->"
KIND = "platform"
STREAM_KB_GOAL = 20


def save(result: dict[str, Any], directory: Path, *, stage: str = "") -> Path:
    """The result as JSON in ``directory`` (``stage``: a part of a run, saved apart)."""
    directory.mkdir(parents=True, exist_ok=True)
    suffix = "" if result["mode"] == "full" else f"-{result['mode']}"
    suffix += f"-{stage}" if stage else ""
    path = directory / f"{result['date']}-platform-{result['backend']}{suffix}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def _traffic(result: dict[str, Any], name: str, connections: int) -> dict[str, Any]:
    for row in result.get("traffic", []):
        if row["name"] == name and row["connections"] == connections:
            return dict(row)
    return {}


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def goal(text: str, value: Any, met: bool | None) -> None:
        out.append({"goal": text, "value": value, "met": met})

    if not result.get("traffic"):  # --huge-only
        return huge.goals(result["huge"]) if result.get("huge") else out
    mixed16 = _traffic(result, "mixed", 16)
    goal("mixed traffic at 16 connections ≥ 0.5 of bare", mixed16.get("of_bare"),
         None if mixed16.get("of_bare") is None else mixed16["of_bare"] >= 0.5)  # fmt: skip
    mixed256 = _traffic(result, "mixed", 256)
    spread = round(mixed256["p99_ms"] / mixed256["p50_ms"], 1) if mixed256.get("p50_ms") else None
    goal("mixed traffic at 256 connections: p99 ≤ 10 x p50", spread,
         None if spread is None else spread <= 10)  # fmt: skip
    errors = sum(row.get("server_errors", 0) for row in result.get("traffic", []))
    goal("no 5xx in the traffic", errors, errors == 0)
    memory = result.get("memory", {})
    if memory:
        goal(
            "worker RSS growth ≤ read-model bound + open streams x 20 KB"
            + (" + SQLite page caches" if memory.get("page_caches_mib") else ""),
            f"{memory['max_growth_mib']} MiB ≤ {memory['allowed_growth_mib']} MiB",
            memory["max_growth_mib"] <= memory["allowed_growth_mib"],
        )
    for row in result.get("cold", []):
        goal(f"cold {row['name']}: ≤ 3 statements", row["statements_cold"],
             row["statements_cold"] <= 3)  # fmt: skip
        goal(
            f"cold {row['name']}: p99 ≤ 5 x warm p99 ({row['teams']:,} teams)",
            row["cold_over_warm_p99"],
            row["cold_over_warm_p99"] <= 5,
        )
    streams = result.get("streams", {})
    if streams:
        latency = streams.get("write_to_event", {})
        p99 = latency.get("p99_ms")
        goal("streams: write → event p99 ≤ 1 s", p99, None if p99 is None else p99 <= 1000)
        ratio = streams.get("read_ratio_kept")
        goal("streams: mixed req/s ≥ 0.8 x without streams", ratio,
             None if ratio is None else ratio >= 0.8)  # fmt: skip
        per = streams.get("kib_per_stream")
        # A worker whose resident memory fell while the streams opened (the allocator
        # gave back pages the traffic had freed) measured nothing about the streams.
        goal(f"streams: memory per open stream ≤ {STREAM_KB_GOAL} KB", per,
             None if per is None or per <= 0 else per <= STREAM_KB_GOAL)  # fmt: skip
        caps = streams.get("past_caps", {})
        if caps:
            clear = caps["refused"] > 0 and caps["refused_with_retry_after"] == caps["refused"]
            goal(
                "past the caps: every refusal a 503 with Retry-After, /healthz answering",
                f"{caps['refused_with_retry_after']}/{caps['refused']} refused with "
                f"Retry-After; /healthz max {caps['healthz_max_ms']} ms",
                clear and (caps["healthz_max_ms"] or 0) < 1000,
            )
    if result.get("huge"):
        out += huge.goals(result["huge"])
    return out


def text(result: dict[str, Any]) -> str:
    lines = [f"\n{LABELS[result['backend']]} platform ({result['mode']} run)"]
    for row in result.get("traffic", []):
        lines.append(
            f"  {row['name']:<22} c={row['connections']:<4} {row['rps']:>9,.0f} req/s "
            f"p50 {row['p50_ms']:>7.2f} p99 {row['p99_ms']:>8.2f} "
            f"of bare {fmt(row.get('of_bare'), '.2f')} 5xx {row['server_errors']} "
            f"load {row['loadavg']}"
        )
    for row in result.get("cold", []):
        lines.append(
            f"  cold {row['name']:<32} statements {row['statements_cold']} "
            f"(org cold {row['statements_cold_org']}) warm p99 {row['warm_p99_ms']} ms "
            f"cold p99 {row['cold_p99_ms']} ms x{row['cold_over_warm_p99']}"
        )
    if result.get("streams"):
        lines.append(f"  streams: {json.dumps(result['streams'])}")
    if result.get("huge"):
        lines.append(f"  one huge organization: {json.dumps(result['huge'])}")
    if result.get("memory"):
        lines.append(f"  memory: {json.dumps(result['memory'])}")
    for g in result["goals"]:
        met = {True: "met", False: "MISSED", None: "n/a"}[g["met"]]
        lines.append(f"goal {met:>6}: {g['goal']} (value {g['value']})")
    return "\n".join(lines)


# -- BENCHMARKS.md -------------------------------------------------------------------


def latest(directory: Path) -> dict[str, dict[str, Any]]:
    """The newest full platform result per backend, else the newest quick one."""
    chosen: dict[str, dict[str, Any]] = {}
    for path in directory.glob("*-platform-*.json"):
        result = json.loads(path.read_text())
        if result.get("kind") != KIND or result["mode"] == "partial":
            continue
        key = (result["mode"] == "full", result["finished_at"])
        current = chosen.get(result["backend"])
        if current is None or key > (current["mode"] == "full", current["finished_at"]):
            chosen[result["backend"]] = result
    return chosen


def render(results: dict[str, dict[str, Any]]) -> str:
    present = [b for b in ("sqlite", "postgresql") if b in results]
    if not present:
        return "_No platform results yet: run `make bench-platform`._"
    parts = [_summary(results, present), _traffic_table(results, present)]
    parts += [_cold_table(results, present), _streams_table(results, present)]
    parts += [_memory_table(results, present), _huge_table(results, present)]
    parts += [_goals_table(results, present)]
    return "\n\n".join(parts)


def _summary(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    lines = []
    for b in present:
        r = results[b]
        d = r["dataset"]
        lines.append(
            f"- **{LABELS[b]}**: {r['mode']} run of {r['finished_at']}, {r['workers']} worker "
            f"process(es); {d['organizations']:,} organizations, {d['teams']:,} teams "
            f"(largest {d['largest']:,}, median {d['median']:g}, seed {d['seed']}), "
            f"{d['rows']:,} rows seeded in {d['seconds']:.0f} s; read-model bound "
            f"{r['settings']['read_model_max_bytes'] // 2**20} MiB; wrk 1 thread, "
            f"{r['settings']['duration_s']:g} s a row after {r['settings']['warmup_s']:g} s "
            f"of warm-up; run started at load {r['loadavg_at_start']}. "
            f"Command: `{r['command']}`."
        )
    return "\n".join(lines)


def _traffic_table(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    lines = [
        "#### Mixed traffic over many organizations",
        "",
        "| Backend | Row | Connections | req/s | p50 ms | p99 ms | p99 ÷ p50 | of bare "
        "| 5xx | load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for b in present:
        for row in results[b].get("traffic", []):
            spread = row["p99_ms"] / row["p50_ms"] if row.get("p50_ms") else None
            lines.append(
                f"| {LABELS[b]} | {row['name']} | {row['connections']} | {row['rps']:,.0f} "
                f"| {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {fmt(spread, '.1f')} "
                f"| {fmt(row.get('of_bare'), '.2f')} | {row['server_errors']} "
                f"| {row['loadavg']} |"
            )
    return "\n".join(lines)


def _cold_table(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    lines = [
        "#### A read whose entry was evicted (cold) against the same read warm",
        "",
        "In-process, one request at a time, on the largest organization: **cold** = the "
        "entry evicted (memos kept), **org cold** = the organization's memos dropped too.",
        "",
        "| Backend | Read | Teams | statements warm / cold / org cold | warm p99 ms "
        "| cold p99 ms | cold ÷ warm | org cold p99 ms | org cold ÷ warm |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for b in present:
        for row in results[b].get("cold", []):
            lines.append(
                f"| {LABELS[b]} | `{row['name']}` | {row['teams']:,} "
                f"| {row['statements_warm']} / {row['statements_cold']} / "
                f"{row['statements_cold_org']} | {row['warm_p99_ms']:.2f} "
                f"| {row['cold_p99_ms']:.2f} | {row['cold_over_warm_p99']:.1f} "
                f"| {row['cold_org_p99_ms']:.2f} | {row['cold_org_over_warm_p99']:.1f} |"
            )
    return "\n".join(lines)


def _streams_table(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    lines = [
        "#### Open leaderboard streams",
        "",
        "| Backend | streams open (per worker) | organizations | open in s | KiB a stream "
        "| CPU of the workers, streams idle (cores) "
        "| write → event p50 / p99 / max ms (samples) | mixed req/s with ÷ without "
        "| past the caps | load |",
        "|---|---:|---:|---:|---:|---:|---|---:|---|---:|",
    ]
    for b in present:
        s = results[b].get("streams")
        if not s:
            continue
        w = s.get("write_to_event", {})
        caps = s.get("past_caps", {})
        lines.append(
            f"| {LABELS[b]} | {s['open']:,} ({s['per_worker']:,}) | {s['organizations']:,} "
            f"| {s['open_seconds']:.1f} | {fmt(s.get('kib_per_stream'), '.1f')} "
            f"| {fmt(s.get('idle_cpu_cores'), '.3f')} "
            f"| {w.get('p50_ms')} / {w.get('p99_ms')} / {w.get('max_ms')} ({w.get('samples')}, "
            f"{w.get('missed')} missed, {w.get('before_201', '-')} before the 201) "
            f"| {fmt(s.get('read_ratio_kept'), '.2f')} "
            f"| {caps.get('tried')} tried: {caps.get('statuses')}, "
            f"{caps.get('refused_with_retry_after')} with Retry-After; /healthz max "
            f"{caps.get('healthz_max_ms')} ms | {s.get('loadavg')} |"
        )
    return "\n".join(lines)


def _memory_table(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    lines = [
        "#### Worker resident memory (MiB)",
        "",
        "| Backend | at start | after the traffic | with the streams open | at the end "
        "| read-model bound | largest growth | allowed growth |",
        "|---|---|---|---|---|---:|---:|---:|",
    ]
    for b in present:
        m = results[b].get("memory")
        if not m:
            continue
        lines.append(
            f"| {LABELS[b]} | {m['start_mib']} | {m['after_traffic_mib']} "
            f"| {m.get('streams_open_mib', '-')} | {m['end_mib']} "
            f"| {m['read_model_max_mib']} | {m['max_growth_mib']} | {m['allowed_growth_mib']} |"
        )
    return "\n".join(lines)


def _huge_table(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    lines = [
        "#### One huge organization",
        "",
        "`make bench`'s read rows at two sizes of one organization (bench/platform/huge.py); "
        "**÷ drift**: the slope with the machine's own slow-down between the sizes (the bare "
        "endpoint's) taken out.",
        "",
        "| Backend | Row | p50 ms, smaller | p50 ms, larger | slope | ÷ drift |",
        "|---|---|---:|---:|---:|---:|",
    ]
    notes = []
    for b in present:
        h = results[b].get("huge")
        if not h:
            continue
        small, large = (str(size) for size in h["sizes"])
        drift = h.get("bare_drift")
        for name, slope in h["slopes"].items():
            adjusted = slope / drift if drift else None
            lines.append(
                f"| {LABELS[b]} | {name} ({int(small):,} → {int(large):,} teams) "
                f"| {fmt(h['p50_ms'][small].get(name), '.2f')} "
                f"| {fmt(h['p50_ms'][large].get(name), '.2f')} | {slope:.2f} "
                f"| {fmt(adjusted, '.2f')} |"
            )
        for whole in h.get("whole_list", []):
            notes.append(
                f"- {LABELS[b]}, `GET /team` of all {whole['teams']:,} teams: "
                f"{whole['status']}, {whole['body_mib']} MiB in {whole['seconds']} s; the "
                f"workers' resident memory grew by at most {whole['peak_growth_mib']} MiB "
                "while it was sent."
            )
        imported = h.get("bulk_import")
        if imported:
            notes.append(
                f"- {LABELS[b]}, bulk import: {imported['created']:,} of {imported['teams']:,} "
                f"teams ({imported['members_a_team']} members each, CSV, batches of "
                f"{huge.BATCH:,}, {huge.CLIENTS} clients) in {imported['seconds']} s: "
                f"**{imported['teams_per_second']:,} teams/s** "
                f"({imported['batches_refused']} batches refused)."
            )
        notes.append(f"- {LABELS[b]}: machine drift {drift}, load at each size {h.get('load')}.")
    return "\n".join([*lines, "", *notes])


def _goals_table(results: dict[str, dict[str, Any]], present: list[str]) -> str:
    return goals_table("#### Goals", results, present, lambda goal: str(goal["value"]))


def write_markdown(path: Path, directory: Path) -> None:
    generated = render(latest(directory))
    text_ = path.read_text() if path.exists() else "# Benchmarks\n"
    if BEGIN not in text_ or END not in text_:
        text_ += f"\n{BEGIN}\n{END}\n"
    head, rest = text_.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{generated}\n{END}{tail}")

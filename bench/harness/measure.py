"""Measuring the rows against one running service: pre-flight, warm-up, wrk."""

from __future__ import annotations

import os
import re
import secrets
import statistics
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
from tests.support.postgres import free_port

from bench.dataset.seed import Seeded
from bench.harness import learners
from bench.harness.floor import FloorServer, capture
from bench.harness.loadgen import LoadSettings, Measured, Service, run_wrk
from bench.harness.rows import BARE, FLOOR, MIX_READ, PROGRESS_WRITE, Row


@dataclass
class RowResult:
    name: str
    status: str
    """ok | skipped | failed"""
    reason: str = ""
    rps: float | None = None
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    progress_cost: float | None = None
    """A learner's write with a cost goal: what a request costs as a multiple of the
    admin's progress write's (``PROGRESS_WRITE``'s requests/s over this row's), same
    server, same run, the median of paired rounds (``paired_costs``)."""
    ratio: float | None = None
    """requests/s divided by the bare endpoint's (mean of its two measurements, before
    and after the rows), same server, same run."""
    floor_ratio: float | None = None
    """requests/s divided by the floor's (a plain ASGI callable answering the bytes of
    ``GET /leaderboard?limit=50`` on the same server and worker count: harness/floor.py),
    same run."""
    mix_ratio: float | None = None
    """A mix of reads and writes (``Row.reads_per_write``): its reads a second over the
    requests a second of the same read alone (``MIX_READ``), same server, same run."""
    requests: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    loadavg: float = 0.0
    """The machine's 1-minute load average when the row started (noise indicator)."""
    statements: str = ""
    """SQL statements a request sends: "miss / hit" for reads (harness/statements.py)."""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Context:
    service: Service | FloorServer
    seeded: Seeded
    tokens: dict[str, str]
    workdir: Path
    wrk: str
    load: LoadSettings


def _route_key(method: str, path: str) -> tuple[str, str]:
    return method.lower(), re.sub(r"\{[^}]*\}", "{}", path)


def available_routes(base_url: str) -> set[tuple[str, str]]:
    document = httpx.get(f"{base_url}/openapi.json", timeout=30).json()
    return {
        _route_key(method, path)
        for path, operations in document.get("paths", {}).items()
        for method in operations
    }


_prepared: dict[Path, learners.Learners] = {}


def _learners(ctx: Context) -> learners.Learners:
    """The learners' rows' discipline, members and tokens, set up once per size."""
    key = ctx.workdir / f"learners-{ctx.seeded.org_id}-{len(ctx.seeded.team_ids)}"
    if key not in _prepared:
        _prepared[key] = learners.prepare(
            ctx.service.base_url, ctx.tokens["admin"], ctx.seeded, ctx.workdir
        )
    return _prepared[key]


def _ids_file(ctx: Context, row: Row) -> str:
    if row.ids == "none":
        return ""
    if row.ids in ("attempts", "hints"):
        found = _learners(ctx)
        return str(found.attempts if row.ids == "attempts" else found.hints)
    path = ctx.workdir / f"ids-{row.ids}.txt"
    if not path.exists():
        seeded = ctx.seeded
        if row.ids == "teams":
            lines = [str(t) for t in seeded.team_ids]
        elif row.ids == "disciplines":
            lines = [str(d) for d in seeded.discipline_ids]
        else:
            lines = [f"{team} {task}" for team, task in seeded.progress_pairs]
        path.write_text("\n".join(lines) + "\n")
    return str(path)


def _preflight(ctx: Context, row: Row) -> str | None:
    """One request of the row's kind; the reason it is not as expected, or None."""
    headers = {"Authorization": f"Bearer {ctx.tokens[row.role]}"}
    base = ctx.service.base_url
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        if row.script == "get.lua":
            path = row.path
            if row.ids == "teams":
                path = path.replace("{id}", str(ctx.seeded.team_ids[0]))
            elif row.ids == "disciplines":
                path = path.replace("{id}", str(ctx.seeded.discipline_ids[0]))
            answers = [client.get(path)]
        elif row.script == "learners.lua":
            answers = learners.preflight(base, ctx.tokens["admin"], _learners(ctx), row.learner)
        elif row.script == "progress.lua":
            team, task = ctx.seeded.spare_pair
            answers = [client.post(f"/team/{team}/progress", json={"TaskId": str(task)})]
            withdrawn = client.delete(f"/team/{team}/progress/{task}")
            if withdrawn.status_code not in (200, 204):
                answers.append(withdrawn)
        else:
            name = f"preflight {secrets.token_hex(4)}"
            answers = [client.post("/team/bulk", json=[{"name": name}])]
    for answer in answers:
        if answer.status_code not in row.expect and answer.status_code not in (200, 204):
            request = answer.request
            return (
                f"{request.method} {request.url.path} answered {answer.status_code}: "
                f"{answer.text[:200]}"
            )
    return None


def _etag(ctx: Context, row: Row) -> str:
    headers = {"Authorization": f"Bearer {ctx.tokens[row.role]}"}
    with httpx.Client(base_url=ctx.service.base_url, headers=headers, timeout=60) as client:
        return client.get(row.path).headers.get("etag", "")


def _env(ctx: Context, row: Row) -> dict[str, str]:
    """What the row's script reads (wrk passes the environment to Lua)."""
    return {
        "BENCH_TOKEN": ctx.tokens[row.role],
        "BENCH_PATH": row.path,
        "BENCH_IDS": _ids_file(ctx, row),
        "BENCH_RUN": uuid.uuid4().hex[:8],
        "BENCH_READ_AFTER": row.read_after,
        "BENCH_READS_PER_WRITE": str(row.reads_per_write),
        "BENCH_IF_NONE_MATCH": _etag(ctx, row) if row.revalidate else "",
        "BENCH_LEARNER": row.learner,
        "BENCH_RIGHT": learners.RIGHT,
        "BENCH_WRONG": learners.WRONG,
    }


def _measured_run(ctx: Context, row: Row, env: dict[str, str], seconds: float) -> Measured:
    """One measured wrk run of the row (after its warm-up)."""
    env = {**env, "BENCH_RUN": uuid.uuid4().hex[:8]}
    if row.learner == "right":
        learners.withdraw_answered(ctx.service.base_url, ctx.tokens["admin"], _learners(ctx))
    ids = len(ctx.seeded.progress_pairs)
    if row.ids in ("attempts", "hints"):
        # Past the lines the warm-up used: its hints are unlocked (its right answers
        # were withdrawn above).
        ids = len(Path(env["BENCH_IDS"]).read_text().splitlines())
    env["BENCH_OFFSET"] = str(ids // 2 // ctx.load.threads)
    return run_wrk(
        ctx.wrk,
        base_url=ctx.service.base_url,
        script=row.script,
        env=env,
        load=ctx.load,
        seconds=seconds,
    )


def measure(ctx: Context, row: Row) -> RowResult:
    result = RowResult(name=row.name, status="ok", loadavg=round(os.getloadavg()[0], 2))
    reason = _preflight(ctx, row)
    if reason is not None:
        result.status, result.reason = "failed", reason
        return result
    env = _env(ctx, row)
    if ctx.load.warmup_s > 0:
        # Rows over many ids warm up walking the ids in order (every process's read
        # model gets each id's entry when the window allows), then measure random ids.
        run_wrk(
            ctx.wrk,
            base_url=ctx.service.base_url,
            script=row.script,
            env={**env, "BENCH_SEQUENTIAL": "1"} if row.ids in ("teams", "disciplines") else env,
            load=ctx.load,
            seconds=ctx.load.warmup_s,
        )
    measured = _measured_run(ctx, row, env, max(ctx.load.duration_s, row.min_seconds))
    result.rps = round(measured.rps, 1)
    result.p50_ms = round(measured.p50_ms, 2)
    result.p90_ms = round(measured.p90_ms, 2)
    result.p99_ms = round(measured.p99_ms, 2)
    result.requests = measured.requests
    result.errors = {k: v for k, v in measured.errors.items() if v}
    result.statuses = measured.statuses
    if not measured.requests:
        result.status, result.reason = "failed", "no request completed in the measured time"
    elif measured.error_count > 0.01 * measured.requests:
        result.status = "failed"
        result.reason = f"{measured.error_count} of {measured.requests} requests failed"
        if measured.statuses:
            result.reason += f" (statuses {measured.statuses})"
    return result


PAIRED_ROUNDS = 4
"""Rounds of the learners' cost (``paired_costs``): even, so that each order of a pair
(which runs first) counts as often."""


def paired_costs(
    ctx: Context, base: Row, compared: list[Row], *, log: Any = None
) -> dict[str, float]:
    """What a request of each ``compared`` row costs as a multiple of ``base``'s: the
    median over ``PAIRED_ROUNDS`` rounds of ``base``'s requests/s over the row's, each
    measured right after the other (the order reversed every other round). Rows a
    quarter of a minute apart on a shared machine drift by more than the differences
    measured; adjacent runs drift alike."""
    seconds = max(3.0, ctx.load.duration_s / 3)
    envs = {row.name: _env(ctx, row) for row in [base, *compared]}
    ratios: dict[str, list[float]] = {row.name: [] for row in compared}
    for number in range(PAIRED_ROUNDS):
        for row in compared:
            pair = [base, row] if number % 2 == 0 else [row, base]
            rps = {r.name: _measured_run(ctx, r, envs[r.name], seconds).rps for r in pair}
            if rps[base.name] and rps[row.name]:
                ratios[row.name].append(rps[base.name] / rps[row.name])
                if log is not None:
                    log(f"  paired round {number + 1}: {row.name}: "
                        f"{rps[base.name] / rps[row.name]:.2f}x")  # fmt: skip
    return {name: round(statistics.median(found), 2) for name, found in ratios.items() if found}


def _say(line: str) -> None:
    print(line, flush=True)


def measure_all(ctx: Context, rows: list[Row], teams: int, *, log: Any = _say) -> list[RowResult]:
    """The bare endpoint, the reads, the bare endpoint again, then the writes (they change
    the data, and a write row leaves requests running in the server after wrk stops).
    Ratios divide by the mean of the two bare figures, taken around the reads."""
    routes = available_routes(ctx.service.base_url)
    results = [_bare(ctx, teams, log, ""), _floor(ctx, teams, log)]
    reads = [r for r in rows if not r.writes]
    writes = [r for r in rows if r.writes]
    for row in reads:
        results += _row(ctx, row, teams, routes, log)
    results.append(_bare(ctx, teams, log, ", again"))
    for row in writes:
        results += _row(ctx, row, teams, routes, log)
    bare = [r.rps for r in results if r.name.startswith(BARE.name) and r.rps]
    ceiling = statistics.mean(bare) if bare else None
    floor = next((r.rps for r in results if r.name == FLOOR.name and r.rps), None)
    costs = _learner_costs(ctx, rows, results, log)
    progress = next((r.rps for r in results if r.name == PROGRESS_WRITE and r.rps), None)
    by_name = {row.name: row for row in rows}
    for result in results:
        if result.name in costs:
            result.progress_cost = costs[result.name]
        elif progress and result.rps and by_name.get(result.name, BARE).learner:
            result.progress_cost = round(progress / result.rps, 2)  # no goal: one run
        if result.rps is None or result.name.startswith(BARE.name):
            continue
        result.mix_ratio = _mix_ratio(by_name.get(result.name), result, results)
        if ceiling:
            result.ratio = round(result.rps / ceiling, 3)
        if floor and result.name != FLOOR.name:
            result.floor_ratio = round(result.rps / floor, 3)
    return results


def _mix_ratio(row: Row | None, result: RowResult, results: list[RowResult]) -> float | None:
    """The mix's reads a second over the read's alone (``RowResult.mix_ratio``)."""
    if row is None or row.mix_goal is None or result.rps is None:
        return None
    alone = next((r.rps for r in results if r.name == MIX_READ and r.rps), None)
    if not alone:
        return None
    reads = result.rps * row.reads_per_write / (row.reads_per_write + 1)
    return round(reads / alone, 3)


def _learner_costs(
    ctx: Context, rows: list[Row], results: list[RowResult], log: Any
) -> dict[str, float]:
    """The learners' rows with a cost goal, measured against the progress write in
    paired rounds (``paired_costs``), once both measured without failing."""
    ok = {r.name for r in results if r.status == "ok" and r.rps}
    base = next((row for row in rows if row.name == PROGRESS_WRITE and row.name in ok), None)
    compared = [row for row in rows if row.progress_goal is not None and row.name in ok]
    if base is None or not compared:
        return {}
    return paired_costs(ctx, base, compared, log=log)


def _floor(ctx: Context, teams: int, log: Any) -> RowResult:
    """The floor row: the service's answer to ``GET /leaderboard?limit=50`` captured, then
    served by a plain ASGI callable on the same server and worker count (harness/floor.py)."""
    answer = capture(
        ctx.service.base_url, FLOOR.path, ctx.tokens[FLOOR.role], ctx.workdir / "floor.json"
    )
    floor = FloorServer(
        port=free_port(), workers=ctx.service.workers, answer=answer, workdir=ctx.workdir
    )
    with floor:
        result = measure(replace(ctx, service=floor), FLOOR)
    log(_line(result, teams))
    return result


def _bare(ctx: Context, teams: int, log: Any, suffix: str) -> RowResult:
    result = measure(ctx, BARE)
    result.name += suffix
    log(_line(result, teams))
    return result


def _row(
    ctx: Context, row: Row, teams: int, routes: set[tuple[str, str]], log: Any
) -> list[RowResult]:
    if row.only_at is not None and row.only_at != teams:
        return []
    if _route_key(*row.route) not in routes:
        result = RowResult(name=row.name, status="skipped", reason="endpoint not in this build yet")
    else:
        result = measure(ctx, row)
    log(_line(result, teams))
    return [result]


def _line(r: RowResult, teams: int) -> str:
    if r.status == "skipped":
        return f"  {teams:>7,}  {r.name:<46} skipped: {r.reason}"
    if r.rps is None:
        return f"  {teams:>7,}  {r.name:<46} FAILED: {r.reason}"
    ratio = f"{r.ratio:.2f}" if r.ratio is not None else "   -"
    flag = "" if r.status == "ok" else f"  FAILED: {r.reason}"
    return (
        f"  {teams:>7,}  {r.name:<46} {r.rps:>8.1f} req/s  p50 {r.p50_ms:>7.2f} ms"
        f"  p99 {r.p99_ms:>8.2f} ms  x bare {ratio}  load {r.loadavg:.1f}{flag}"
    )

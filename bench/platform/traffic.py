"""The mixed traffic over many organizations: wrk with bench/harness/lua/platform.lua, and
the bare endpoint at the same connection count, for the ratio."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dataset.sqlgen import EPOCH_MS
from bench.dataset.tenants import Tenants
from bench.harness.loadgen import LoadSettings, Measured, run_wrk

ZIPF_S = 1.1
"""The traffic's skew over the organizations' ranks (issue 30: s ≈ 1.1)."""


def orgs_file(path: Path, tenants: Tenants, tokens: list[tuple[str, str]]) -> Path:
    """platform.lua's organizations: "member_token admin_token first size", by rank."""
    lines = [
        f"{member} {admin} {first} {size}"
        for (member, admin), first, size in zip(tokens, tenants.firsts, tenants.sizes, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass(frozen=True, slots=True)
class Load:
    wrk: str
    base_url: str
    orgs: Path
    duration_s: float
    warmup_s: float


def _row(name: str, connections: int, measured: Measured, loadavg: float) -> dict[str, Any]:
    statuses = measured.statuses
    return {
        "name": name,
        "connections": connections,
        "rps": round(measured.rps, 1),
        "p50_ms": round(measured.p50_ms, 2),
        "p99_ms": round(measured.p99_ms, 2),
        "requests": measured.requests,
        "errors": {k: v for k, v in measured.errors.items() if v},
        "statuses": statuses,
        "server_errors": sum(v for k, v in statuses.items() if k.startswith("5")),
        "loadavg": loadavg,
    }


def bare(load: Load, connections: int, token: str) -> dict[str, Any]:
    """``GET /healthz`` (the bare endpoint of ``make bench``), same server and settings."""
    settings = LoadSettings(1, connections, load.duration_s, load.warmup_s)
    env = {"BENCH_TOKEN": token, "BENCH_PATH": "/healthz"}
    loadavg = round(os.getloadavg()[0], 2)
    run_wrk(load.wrk, base_url=load.base_url, script="get.lua", env=env, load=settings,
            seconds=load.warmup_s)  # fmt: skip
    measured = run_wrk(
        load.wrk, base_url=load.base_url, script="get.lua", env=env, load=settings,
        seconds=load.duration_s,
    )  # fmt: skip
    return _row("GET /healthz (bare)", connections, measured, loadavg)


def mixed(
    load: Load, connections: int, *, name: str = "mixed", warm: bool = True
) -> dict[str, Any]:
    """The mix (85 % reads, 10 % progress, 5 % team and member writes) at ``connections``."""
    settings = LoadSettings(1, connections, load.duration_s, load.warmup_s)
    env = {
        "BENCH_ORGS": str(load.orgs),
        "BENCH_EPOCH_MS": str(EPOCH_MS),
        "BENCH_ZIPF_S": str(ZIPF_S),
        "BENCH_RUN": uuid.uuid4().hex[:8],
    }
    loadavg = round(os.getloadavg()[0], 2)
    if warm and load.warmup_s > 0:
        run_wrk(load.wrk, base_url=load.base_url, script="platform.lua", env=env,
                load=settings, seconds=load.warmup_s)  # fmt: skip
        env["BENCH_RUN"] = uuid.uuid4().hex[:8]
    measured = run_wrk(
        load.wrk, base_url=load.base_url, script="platform.lua", env=env, load=settings,
        seconds=load.duration_s,
    )  # fmt: skip
    return _row(name, connections, measured, loadavg)

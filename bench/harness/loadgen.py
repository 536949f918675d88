"""The load generator (Debian's ``wrk``) and the service under test (``questline serve``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

LUA_DIR = Path(__file__).parent / "lua"


def ensure_wrk() -> str:
    """The path of ``wrk``, installed with apt-get where it is missing."""
    found = shutil.which("wrk")
    if found:
        return found
    print("bench: installing wrk (apt-get install wrk)", flush=True)
    apt = ["apt-get"] if os.geteuid() == 0 else ["sudo", "apt-get"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([*apt, "update", "-qq"], check=True, env=env)
    subprocess.run([*apt, "install", "-y", "-qq", "wrk"], check=True, env=env)
    found = shutil.which("wrk")
    if not found:
        raise RuntimeError("wrk is not installed and apt-get could not install it")
    return found


def wrk_version(wrk: str) -> str:
    result = subprocess.run([wrk, "--version"], capture_output=True, text=True)
    return (result.stdout or result.stderr).splitlines()[0].strip()


@dataclass(frozen=True, slots=True)
class LoadSettings:
    threads: int
    connections: int
    duration_s: float
    warmup_s: float
    timeout_s: int = 30


@dataclass(frozen=True, slots=True)
class Measured:
    requests: int
    seconds: float
    errors: dict[str, int]
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    statuses: dict[str, int]
    """Responses by status (the write scripts count them)."""

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def run_wrk(
    wrk: str,
    *,
    base_url: str,
    script: str,
    env: dict[str, str],
    load: LoadSettings,
    seconds: float,
) -> Measured:
    argv = [
        wrk,
        f"-t{load.threads}",
        f"-c{load.connections}",
        f"-d{max(1, round(seconds))}s",
        f"--timeout={load.timeout_s}s",
        "-s",
        str(LUA_DIR / script),
        base_url,
    ]
    full_env = {
        **os.environ,
        **env,
        "BENCH_LUA_DIR": str(LUA_DIR),
        "BENCH_THREADS": str(load.threads),
    }
    result = subprocess.run(
        argv, env=full_env, capture_output=True, text=True, timeout=seconds + load.timeout_s + 60
    )
    for line in result.stdout.splitlines():
        if line.startswith("BENCH_RESULT "):
            data: dict[str, Any] = json.loads(line.removeprefix("BENCH_RESULT "))
            latency = data["latency_us"]
            return Measured(
                requests=int(data["requests"]),
                seconds=data["duration_us"] / 1e6,
                errors={k: int(v) for k, v in data["errors"].items()},
                p50_ms=latency["p50"] / 1000,
                p90_ms=latency["p90"] / 1000,
                p99_ms=latency["p99"] / 1000,
                mean_ms=latency["mean"] / 1000,
                statuses={k: int(v) for k, v in data.get("statuses", {}).items()},
            )
    raise RuntimeError(f"wrk gave no result:\n{result.stdout}\n{result.stderr}")


SERVERS = ("uvicorn", "granian")
"""``uvicorn``: ``questline serve`` (what the service ships). ``granian``: the same
application under granian (a dev dependency), for the server comparison of
bench/probes/servers.py and docs/deploy.md."""


def granian_argv(*, port: int, workers: int) -> list[str]:
    """granian serving the application factory as ``questline serve`` would: uvloop, no
    access log, HTTP/1.1, the same header-read timeout and head bound
    (``questline.web.server_options.granian_options``)."""
    from questline.config import Settings
    from questline.web.server_options import granian_options

    options = granian_options(Settings(_env_file=None))
    http1 = options["http1_settings"]
    granian = Path(sys.executable).parent / "granian"
    return [
        str(granian),
        "--interface",
        "asgi",
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--loop",
        "uvloop",
        "--http",
        "1",
        "--no-ws",
        "--log-level",
        "warning",
        "--no-access-log",
        "--backpressure",
        str(options["backpressure"]),
        "--http1-header-read-timeout",
        str(http1["header_read_timeout"]),
        "--http1-buffer-size",
        str(http1["max_buffer_size"]),
        "questline.app:create_served_app",
    ]


class Service:
    """``questline serve`` as users run it (or granian), in its own process group."""

    def __init__(
        self,
        *,
        env: dict[str, str],
        workers: int,
        port: int,
        workdir: Path,
        server: str = "uvicorn",
    ) -> None:
        self.env = env
        self.server = server
        self.workers = workers
        self.port = port
        self.workdir = workdir
        self.base_url = f"http://127.0.0.1:{port}"
        self.log_path = workdir / f"serve-{port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Service:
        if self.server == "granian":
            argv = granian_argv(port=self.port, workers=self.workers)
        else:
            questline = Path(sys.executable).parent / "questline"
            argv = [str(questline), "serve", "--host", "127.0.0.1", "--port", str(self.port)]
            argv += ["--workers", str(self.workers)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv,
                cwd=self.workdir,
                env={**os.environ, **self.env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__()  # a server that never answered is not left running
            raise
        return self

    def _wait_ready(self, timeout: float = 240) -> None:
        # Two workers took 48 s to answer at a load average of 10 (2026-11-27).
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"questline serve exited; see {self.log_path}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200:
                    time.sleep(0.5 * self.workers)  # let every worker finish starting
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"questline serve did not answer; see {self.log_path}")

    def __exit__(self, *_exc: object) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

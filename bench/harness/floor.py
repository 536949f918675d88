"""The true floor: a plain ASGI callable, served by the same server as ``questline serve``
(uvicorn with ``questline.web.server_options.uvicorn_options``: the same protocol, worker count
and keep-alive), answering every request with the bytes the service answered to
``GET /leaderboard?limit=50`` — the same body and the same response headers — without
FastAPI, middleware, token check or read model. Its requests/s are the most this server
can do for that answer; the read model's hits are compared with it ("of floor").

    python -m bench.harness.floor --port 8123 --workers 2 --answer answer.json

(run from the repository's root, as every ``bench`` module). ``answer.json`` holds the
answer captured from the service (``capture``); the workers read it from the
environment (``BENCH_FLOOR_ANSWER``), set before uvicorn starts them.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ANSWER_ENV = "BENCH_FLOOR_ANSWER"
DROPPED = frozenset({"date", "server", "content-length", "transfer-encoding", "connection"})
"""Headers the server writes itself (uvicorn adds ``date``; ``content-length`` is the
body's)."""


def capture(base_url: str, path: str, token: str, target: Path) -> Path:
    """The service's answer to ``GET path`` (a hit: asked twice), written to ``target``."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client:
        client.get(path)
        answer = client.get(path)
    answer.raise_for_status()
    kept = [(k, v) for k, v in answer.headers.multi_items() if k.lower() not in DROPPED]
    target.write_text(
        json.dumps({"body": base64.b64encode(answer.content).decode(), "headers": kept})
    )
    return target


def _load(path: str) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    data: dict[str, Any] = json.loads(Path(path).read_text())
    body = base64.b64decode(data["body"])
    headers = [(b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in data["headers"]]
    return body, headers


class FloorApp:
    """Every HTTP request answered 200 with the captured bytes, the request body unread
    (a GET has none)."""

    def __init__(self, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        self.start = {"type": "http.response.start", "status": 200, "headers": headers}
        self.body = {"type": "http.response.body", "body": body}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()  # lifespan.startup
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            await send({"type": "lifespan.shutdown.complete"})
            return
        await send(self.start)
        await send(self.body)


def app() -> FloorApp:
    """uvicorn's factory (each worker builds it from the captured answer)."""
    return FloorApp(*_load(os.environ[ANSWER_ENV]))


def serve(port: int, workers: int, answer: Path) -> None:
    import uvicorn

    from questline.config import Settings
    from questline.web.server_options import uvicorn_options

    os.environ[ANSWER_ENV] = str(answer)
    options = uvicorn_options(
        Settings(_env_file=None), host="127.0.0.1", port=port, workers=workers
    )
    options.update(app="bench.harness.floor:app", factory=True, log_level="warning")
    uvicorn.run(**options)


class FloorServer:
    """``python -m bench.harness.floor`` in its own process group, for one measurement."""

    def __init__(self, *, port: int, workers: int, answer: Path, workdir: Path) -> None:
        self.port, self.workers, self.answer = port, workers, answer
        self.base_url = f"http://127.0.0.1:{port}"
        self.log_path = workdir / f"floor-{port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> FloorServer:
        root = Path(__file__).resolve().parents[2]
        argv = [sys.executable, "-m", "bench.harness.floor", "--port", str(self.port)]
        argv += ["--workers", str(self.workers), "--answer", str(self.answer)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv, cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the floor server exited; see {self.log_path}")
            try:
                if httpx.get(self.base_url + "/", timeout=2).status_code == 200:
                    time.sleep(0.5 * self.workers)
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"the floor server did not answer; see {self.log_path}")

    def __exit__(self, *_exc: object) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.harness.floor", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--answer", type=Path, required=True)
    args = parser.parse_args(argv)
    serve(args.port, args.workers, args.answer.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

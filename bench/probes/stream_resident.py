"""What one open ``GET /leaderboard/stream`` costs a worker's resident memory.

``questline serve`` (one worker, SQLite, the default layers) in its own process, and a
raw asyncio client here that opens ``--streams`` streams to one organization and waits
for each first event. The worker's ``VmRSS`` after 20 warm streams and after the rest,
÷ the rest: what ``make bench-platform`` reports as "KiB a stream", without its seeding
and traffic. ``stream_memory`` (in one process, tracemalloc) says where it goes.
Run ``python -m bench.probes.stream_resident``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from bench.harness.loadgen import Service
from bench.platform.memory import workers_rss_kib
from bench.probes.stream_memory import _free_port, _open
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.web.identity import Role

WARM = 20


def _rss(service: Service) -> int:
    assert service.process is not None
    return sum(workers_rss_kib(service.process.pid).values())


async def _measure(service: Service, token: str, streams: int) -> tuple[int, int]:
    port = service.port
    writers = [await _open(port, token) for _ in range(WARM)]
    await asyncio.sleep(1)
    before = _rss(service)
    for start in range(0, streams, 100):
        count = min(100, streams - start)
        writers += await asyncio.gather(*(_open(port, token) for _ in range(count)))
    await asyncio.sleep(1)
    after = _rss(service)
    for writer in writers:
        writer.close()
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", type=int, default=1000)
    args = parser.parse_args()
    streams: int = args.streams
    workdir = Path(tempfile.mkdtemp(prefix="questline-streams-"))
    env = {
        "QUESTLINE_DATA_DIR": str(workdir),
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_STREAM_MAX_PER_PROCESS": str(streams + 100),
        "QUESTLINE_STREAM_MAX_PER_ORGANIZATION": str(streams + 100),
        "QUESTLINE_SERVER_MAX_CONNECTIONS": str(streams + 200),
        # One token opens them all: the rate limiter stays on, above that.
        "QUESTLINE_RATE_LIMIT_READS": f"{streams + 1000}/minute",
    }
    with Service(env=env, workers=1, port=_free_port(), workdir=workdir) as service:
        settings = Settings(_env_file=None, data_dir=workdir)  # the secret serve created
        token = TokenService(settings).mint(role=Role.MEMBER, org_id=uuid.uuid4(), subject="m")
        started = time.monotonic()
        before, after = asyncio.run(_measure(service, token, streams))
    print(
        f"{streams} streams opened in {time.monotonic() - started:.0f} s: worker resident "
        f"{before / 1024:.1f} -> {after / 1024:.1f} MiB, "
        f"{(after - before) / streams:.1f} KiB a stream"
    )


if __name__ == "__main__":
    main()

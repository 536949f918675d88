"""What one open ``GET /leaderboard/stream`` holds in the server, by allocation site.

In one process: the application behind uvicorn (the protocol ``questline serve`` uses),
on SQLite, and a raw asyncio client that opens ``--streams`` streams to one organization
and waits for each first event. tracemalloc compares the heap before and after (idle
streams, every one past its first event) and prints the sites that grew, per stream,
beside the resident memory's growth. Run ``python -m bench.probes.stream_memory``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import tempfile
import tracemalloc
import uuid
from typing import Any

from tests.support.serving import serving

from questline.app import create_app
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role

MARK = b"event: leaderboard"


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def _open(port: int, token: str) -> asyncio.StreamWriter:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET /leaderboard/stream?limit=10 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    seen = b""
    while MARK not in seen:
        chunk = await reader.read(65536)
        if not chunk:
            raise RuntimeError(f"stream closed before its first event: {seen[:200]!r}")
        seen += chunk
    return writer


async def measure(settings: Settings, streams: int, top: int) -> None:
    token = TokenService(settings).mint(role=Role.MEMBER, org_id=uuid.uuid4(), subject="m")
    app = create_app(settings)
    async with serving(app, settings) as url:
        port = int(url.rsplit(":", 1)[1])
        # Warm: the first stream builds the snapshot, the caches and the imports.
        warm = [await _open(port, token) for _ in range(20)]
        gc.collect()
        tracemalloc.start(8)
        before, rss_before = tracemalloc.take_snapshot(), _rss_kib()
        writers: list[asyncio.StreamWriter] = []
        for start in range(0, streams, 100):
            count = min(100, streams - start)
            writers += await asyncio.gather(*(_open(port, token) for _ in range(count)))
        await asyncio.sleep(0.5)
        gc.collect()
        after, rss_after = tracemalloc.take_snapshot(), _rss_kib()
        print("pool:", app.state.questline.db.engine.pool.status())
        diff = after.compare_to(before, "traceback")
        grown = sum(stat.size_diff for stat in diff)
        print(
            f"{streams} streams: traced heap +{grown / streams / 1024:.1f} KiB a stream "
            "(client and server in this process), "
            f"resident +{(rss_after - rss_before) / streams:.1f} KiB a stream"
        )
        client = sum(
            stat.size_diff
            for stat in diff
            if any("stream_memory.py" in frame.filename for frame in stat.traceback)
        )
        print(
            f"of which the client's {client / streams / 1024:.1f} KiB, the server's "
            f"{(grown - client) / streams / 1024:.1f} KiB"
        )
        by_file: dict[str, int] = {}
        for stat in diff:
            if any("stream_memory.py" in frame.filename for frame in stat.traceback):
                continue
            name = stat.traceback[-1].filename.rsplit("/", 2)[-1]
            by_file[name] = by_file.get(name, 0) + stat.size_diff
        for name, size in sorted(by_file.items(), key=lambda item: -item[1])[:top]:
            print(f"{size / streams:8.0f} B  {name}")
        for stat in diff[:top]:
            frames = [f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in stat.traceback[-4:]]
            print(
                f"{stat.size_diff / streams:8.0f} B {stat.count_diff / streams:5.1f} blocks  "
                + " < ".join(reversed(frames))
            )
        for writer in [*writers, *warm]:
            writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--top", type=int, default=40)
    args: Any = parser.parse_args()
    logging.disable(logging.CRITICAL)
    settings = Settings(
        _env_file=None,
        data_dir=tempfile.mkdtemp(),
        # The default layers (the rate limiter too), its limit above what one token opens.
        rate_limit_reads=f"{args.streams + 1000}/minute",
        stream_max_per_process=args.streams + 30,
        stream_max_per_organization=args.streams + 30,
        server_max_connections=args.streams + 100,
    )
    upgrade(settings)
    asyncio.run(measure(settings, args.streams, args.top))


if __name__ == "__main__":
    main()

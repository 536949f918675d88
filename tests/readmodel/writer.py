"""A separate process that commits one write: ``python -m tests.readmodel.writer ORG``.

Settings come from the environment (``QUESTLINE_DATA_DIR``, ``QUESTLINE_DATABASE_URL``),
as for ``questline serve``. Prints the version it committed.

``--die-after-commit``: the process dies (``os._exit``) the moment its commit returns,
before its notifier could announce it — the crash window that the listening
processes' re-read covers (``questline.readmodel.sources.RECHECK_AFTER``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any

from questline.config import Settings
from questline.readmodel.versions import bump
from questline.storage.db import Database


def _die(_notes: dict[Any, int], _moved: Any) -> None:
    os._exit(0)


async def main(org_id: uuid.UUID, *, die_after_commit: bool = False) -> int:
    db = Database(Settings(_env_file=None))  # type: ignore[call-arg]
    if die_after_commit:
        db.on_commit(_die)  # runs synchronously right after COMMIT: nothing was sent
    try:
        async with db.session() as session:
            version = await bump(session, org_id)
            print(version, flush=True)
            return version
    finally:
        await db.dispose()


if __name__ == "__main__":
    asyncio.run(main(uuid.UUID(sys.argv[1]), die_after_commit="--die-after-commit" in sys.argv))

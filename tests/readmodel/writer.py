"""A separate process that commits one write: ``python -m tests.readmodel.writer ORG``.

Settings come from the environment (``QUESTLINE_DATA_DIR``, ``QUESTLINE_DATABASE_URL``),
as for ``questline serve``. Prints the version it committed.
"""

from __future__ import annotations

import asyncio
import sys
import uuid

from questline.config import Settings
from questline.readmodel.versions import bump
from questline.storage.db import Database


async def main(org_id: uuid.UUID) -> int:
    db = Database(Settings(_env_file=None))  # type: ignore[call-arg]
    try:
        async with db.session() as session:
            return await bump(session, org_id)
    finally:
        await db.dispose()


if __name__ == "__main__":
    print(asyncio.run(main(uuid.UUID(sys.argv[1]))))

"""Statements a request sends, counted in-process on the benchmark's own database.

For a read: on a miss (the read model's entry dropped, its memos of the version kept:
what most misses meet) and on a hit, as "miss / hit". For a write row: the statements
of one completion (POST …/progress: a batch of one of the group commit). The counts are
of statements the database driver runs through the engine (BEGIN on SQLite included),
of the read model's lean misses (readmodel/lean.py) and of the progress group commit
on PostgreSQL (progress/group_commit.py; both bypass the engine); the read model's version
checks (the LISTEN connection, SQLite's private connection) are not counted.
"""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import event

from bench.harness.rows import Row
from questline.app import create_app
from questline.config import Settings
from questline.readmodel.service import ReadModel


def _path(row: Row, seeded: Any) -> str:
    path = row.path
    if row.ids == "teams":
        path = path.replace("{id}", str(seeded.team_ids[1]))
    elif row.ids == "disciplines":
        path = path.replace("{id}", str(seeded.discipline_ids[0]))
    return path


def readmodel_of_app(app: Any) -> ReadModel:
    found: ReadModel = app.state.readmodel
    return found


async def count(
    settings: Settings, tokens: dict[str, str], seeded: Any, rows: list[Row]
) -> dict[str, str]:
    app = create_app(settings.model_copy(update={"rate_limit_enabled": False}))
    state = app.state.questline
    readmodel = readmodel_of_app(app)
    texts: list[str] = []

    def before(*_args: Any) -> None:
        texts.append("")

    event.listen(state.db.engine.sync_engine, "before_cursor_execute", before)
    readmodel.lean.listeners.append(before)
    app.state.progress_writes.listeners.append(before)
    found: dict[str, str] = {}
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for row in rows:
                headers = {"Authorization": f"Bearer {tokens[row.role]}"}
                if row.script == "get.lua":
                    path = _path(row, seeded)
                    await client.get(path, headers=headers)
                    readmodel.cache.drop_bodies()
                    texts.clear()
                    await client.get(path, headers=headers)
                    miss = len(texts)
                    texts.clear()
                    await client.get(path, headers=headers)
                    found[row.name] = f"{miss} / {len(texts)}"
                elif row.script == "progress.lua" and not row.read_after:
                    team, task = seeded.spare_pair
                    texts.clear()
                    await client.post(
                        f"/team/{team}/progress", json={"TaskId": str(task)}, headers=headers
                    )
                    found[row.name] = str(len(texts))
                    await client.delete(f"/team/{team}/progress/{task}", headers=headers)
    finally:
        await state.db.dispose()
    return found

"""Counting the SQL statements a request sends (constant-query and set-based checks)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event

from questline.storage.db import Database


@dataclass
class StatementLog:
    statements: int = 0
    """Cursor executions (an executemany batch counts once)."""
    rows: int = 0
    """Parameter sets sent (an executemany of n rows counts n)."""
    texts: list[str] = field(default_factory=list)


@contextmanager
def count_statements(db: Database) -> Iterator[StatementLog]:
    log = StatementLog()
    engine = db.engine.sync_engine

    def before(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool
    ) -> None:
        log.statements += 1
        log.rows += len(parameters) if many else 1
        log.texts.append(statement)

    event.listen(engine, "before_cursor_execute", before)
    try:
        yield log
    finally:
        event.remove(engine, "before_cursor_execute", before)

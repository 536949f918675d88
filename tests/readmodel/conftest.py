from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI

from questline.app import create_app
from questline.config import Settings


@pytest.fixture
async def other_app(settings: Settings) -> AsyncIterator[FastAPI]:
    """A second application on the same database: another worker process's view."""
    app = create_app(settings)
    try:
        yield app
    finally:
        await app.state.questline.db.dispose()

"""Fixtures of the progress tests."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from questline.progress.fastpath import FastWrites
from tests.progress.fast import Fast


@pytest.fixture
def fast(app: FastAPI) -> Fast:
    """The app's progress fast path (switched on), counted from now."""
    found: FastWrites = app.state.progress_fast_path
    assert found.enabled
    return Fast(found)

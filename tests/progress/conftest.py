"""Fixtures of the progress tests."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.progress.fast import Fast


@pytest.fixture
def fast(app: FastAPI) -> Fast:
    """The app's group-committed progress writes (switched on), counted from now."""
    found = Fast(app)
    assert found.enabled
    return found

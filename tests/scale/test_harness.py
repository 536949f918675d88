"""The scale-out harness itself: a missing Debian tool skips with the command to run."""

from __future__ import annotations

import os

import pytest

from tests.support import pgbouncer
from tests.support.pgbouncer import ensure_tool


def test_a_missing_tool_skips_with_the_install_command_when_not_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pgbouncer.os, "geteuid", lambda: 1000)
    with pytest.raises(pytest.skip.Exception) as skipped:
        ensure_tool("questline-no-such-tool", "questline-no-such-package")
    assert str(skipped.value) == (
        "questline-no-such-tool is not installed; run: apt-get update && "
        "apt-get install -y --no-install-recommends questline-no-such-package"
    )


def test_a_present_tool_is_found() -> None:
    found = ensure_tool("sh", "dash")
    assert os.access(found, os.X_OK)

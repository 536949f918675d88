"""Readable operation: ``--version``, logs for people on a terminal and JSON for
machines, Alembic quiet unless asked; and the test bootstrap's report of what is missing."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
from pathlib import Path

import pytest

from questline import __version__
from questline.config import Settings
from questline.logging_setup import make_handler, resolve_format
from questline.storage.migrate import upgrade
from tests.support import system_packages
from tests.support.live import questline_command


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*questline_command(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


def test_version() -> None:
    done = run("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"questline {__version__}"


def _record(message: str = "GET /team 200", **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("questline.access", logging.INFO, __file__, 1, message, None, None)
    record.__dict__.update(extra)
    return record


def test_logs_are_text_on_a_terminal_and_json_otherwise() -> None:
    leader, follower = os.openpty()
    try:
        with open(follower, "w", closefd=False) as terminal:
            assert resolve_format("auto", terminal) == "text"
    finally:
        os.close(leader)
        os.close(follower)
    assert resolve_format("auto", io.StringIO()) == "json"
    assert resolve_format("text", io.StringIO()) == "text"  # the setting wins
    assert resolve_format("json", None) == "json"

    text_out = io.StringIO()
    handler = make_handler("text", text_out)
    handler.handle(_record(duration_ms=3.1, path="/team", method="GET", status=200))
    line = text_out.getvalue().strip()
    assert "INFO  questline.access [-] GET /team 200 (duration_ms=3.1, path=/team)" in line
    assert not line.startswith("{")

    json_out = io.StringIO()
    make_handler("auto", json_out).handle(_record(duration_ms=3.1))
    parsed = json.loads(json_out.getvalue())
    assert parsed["message"] == "GET /team 200"
    assert parsed["duration_ms"] == 3.1


def _migration_lines(tmp_path: Path, **kwargs: bool) -> list[str]:
    out = io.StringIO()
    handler = make_handler("text", out)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        upgrade(Settings(data_dir=tmp_path, _env_file=None), **kwargs)  # type: ignore[call-arg]
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    return [line for line in out.getvalue().splitlines() if "alembic" in line]


def test_alembic_is_quiet_unless_asked(tmp_path: Path) -> None:
    assert _migration_lines(tmp_path / "quiet") == []
    loud = _migration_lines(tmp_path / "loud", verbose=True)
    assert any("Running upgrade" in line for line in loud), loud


def test_db_upgrade_prints_one_line_or_every_migration_with_verbose(tmp_path: Path) -> None:
    env = {"QUESTLINE_DATA_DIR": str(tmp_path)}
    quiet = run("db", "upgrade", env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert quiet.stdout.startswith("database at head")
    verbose = run("db", "upgrade", "-v", env={"QUESTLINE_DATA_DIR": str(tmp_path / "v")})
    assert verbose.returncode == 0, verbose.stderr
    assert "Running upgrade" in verbose.stderr
    assert verbose.stderr.lstrip().startswith("{"), "not a terminal: JSON lines"


def test_a_missing_os_package_is_reported_with_the_command_that_installs_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    need = system_packages.Need(
        what="Frobnicator", packages=("frobnicate",), paths=("/nonexistent/frob", "no-such-cmd")
    )
    reason = system_packages.missing_reason(need)
    assert reason is not None
    assert "apt-get install -y --no-install-recommends frobnicate" in reason
    present = system_packages.Need(what="sh", packages=("dash",), paths=("/bin/sh",))
    assert system_packages.missing_reason(present) is None
    if os.geteuid() != 0:  # as root it would really install: `make test` shows that path
        assert system_packages.install_missing((need,)) == 1
        assert "sudo apt-get install" in capsys.readouterr().err

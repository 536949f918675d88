"""The command line starts at once: ``--version``, ``token create`` and ``signin-link``
load neither FastAPI nor what they do not need of SQLAlchemy (issue 25, item 8).

Each command runs as the user runs it, in a fresh interpreter with ``-X importtime``,
and the test reads which modules it imported. No clock is read: the wall times are a
row of ``python -m bench.run`` (``bench/harness/cli_startup.py``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from questline.config import Settings
from questline.storage.migrate import upgrade

ORG = "00000000-0000-0000-0000-0000000000a1"


def imported_modules(args: list[str], data_dir: Path) -> set[str]:
    """The modules ``questline ARGS`` imports (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "questline.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=data_dir,
        env={"PATH": "/usr/bin:/bin", "QUESTLINE_DATA_DIR": str(data_dir)},
    )
    report = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert done.returncode == 0, "\n".join(
        line for line in done.stderr.splitlines() if line not in report
    )
    return {line.rsplit("|", 1)[1].strip() for line in report}


def heavy(modules: set[str], *roots: str) -> list[str]:
    return sorted(m for m in modules if m in roots or m.startswith(tuple(f"{r}." for r in roots)))


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--version"], id="version"),
        pytest.param(["token", "create", "--org", ORG, "--role", "member"], id="token-create"),
        pytest.param(["token", "create", "--role", "operator"], id="token-create-operator"),
    ],
)
def test_commands_without_a_database_import_neither_the_web_framework_nor_sqlalchemy(
    tmp_path: Path, args: list[str]
) -> None:
    modules = imported_modules(args, tmp_path)
    assert "typer" in modules  # the report is read
    assert heavy(modules, "fastapi", "starlette", "sqlalchemy", "alembic", "httpx") == []


def test_version_loads_neither_the_settings_nor_the_token_library(tmp_path: Path) -> None:
    """``--version`` needs Typer alone: pydantic-settings and PyJWT (with cryptography)
    were most of its start-up."""
    modules = imported_modules(["--version"], tmp_path)
    assert "typer" in modules
    assert heavy(modules, "questline.config", "pydantic_settings", "jwt", "cryptography") == []


def _migrated(tmp_path: Path) -> Path:
    upgrade(Settings(data_dir=tmp_path, _env_file=None))  # type: ignore[call-arg]
    return tmp_path


def test_signin_link_loads_the_database_but_not_what_the_service_serves_with(
    tmp_path: Path,
) -> None:
    """It writes a sign-in code, so it loads SQLAlchemy (whose asyncio extension imports
    its ORM): but not the HTTP client, the migrations or the application."""
    modules = imported_modules(["signin-link", "--org", ORG], _migrated(tmp_path))
    assert "sqlalchemy.ext.asyncio" in modules
    assert heavy(modules, "httpx", "alembic", "questline.app", "questline.web.routing") == []


def test_signin_link_imports_no_web_framework(tmp_path: Path) -> None:
    modules = imported_modules(["signin-link", "--org", ORG], _migrated(tmp_path))
    assert heavy(modules, "fastapi", "starlette") == []

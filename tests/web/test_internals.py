"""Private names of the libraries are used in the two adapter modules only, and those
were read against the versions installed.

``questline.web.internals`` (Starlette, FastAPI) and ``questline.storage.internals``
(aiosqlite, SQLAlchemy) each name the versions they were checked against: an upgrade of
the lock fails here, naming the module to re-read, instead of breaking silently.
"""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pytest

import questline
from questline.storage import internals as storage_internals
from questline.web import internals as web_internals

ROOT = Path(questline.__file__).parent
ADAPTERS = {
    ROOT / "web" / "internals.py": web_internals.CHECKED_AGAINST,
    ROOT / "storage" / "internals.py": storage_internals.CHECKED_AGAINST,
}
LIBRARIES = ("fastapi", "starlette", "sqlalchemy", "aiosqlite", "pydantic", "uvicorn", "httpx")
KNOWN_PRIVATE_ATTRIBUTES = frozenset(
    {"_json", "_native_telemetry", "_conn", "_execute", "_max_overflow"}
)
"""The private attributes the adapters reach for: nowhere else may read them."""


@pytest.mark.parametrize(
    ("adapter", "library", "checked"),
    [(path, lib, version) for path, pins in ADAPTERS.items() for lib, version in pins.items()],
    ids=lambda value: value.name if isinstance(value, Path) else str(value),
)
def test_each_adapter_was_read_against_the_installed_version(
    adapter: Path, library: str, checked: str
) -> None:
    installed = importlib.metadata.version(library)
    assert installed == checked, (
        f"{adapter.relative_to(ROOT.parent)} uses private names of {library}, read against "
        f"{checked}; {installed} is installed. Re-read each use there against {installed} "
        "(the library's source), then update CHECKED_AGAINST."
    )


def _private_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in LIBRARIES and (
                any(part.startswith("_") for part in node.module.split("."))
                or any(alias.name.startswith("_") for alias in node.names)
            ):
                found.append(f"{path.name}:{node.lineno}: from {node.module} import …")
        elif isinstance(node, ast.Attribute) and node.attr in KNOWN_PRIVATE_ATTRIBUTES:
            found.append(f"{path.name}:{node.lineno}: .{node.attr}")
    return found


def test_private_names_of_libraries_are_used_in_the_adapters_only() -> None:
    outside = [
        use
        for path in sorted(ROOT.rglob("*.py"))
        if path not in ADAPTERS
        for use in _private_uses(path)
    ]
    assert outside == [], "\n".join(outside)
    # And the rule sees what it looks for: the adapters themselves hold such uses.
    assert all(_private_uses(path) for path in ADAPTERS)


def test_the_declared_routes_are_the_ones_fastapi_routes_to(tmp_path: Path) -> None:
    """``declared_routes`` walks the included routers without building their copies; on
    the whole application it must give what FastAPI's own walk gives (each route, its
    path with every prefix, in the router's order), nested routers (SCIM's) included."""
    from fastapi.routing import iter_route_contexts

    from questline.app import create_app
    from questline.config import Settings

    app = create_app(Settings(_env_file=None, data_dir=tmp_path))  # type: ignore[call-arg]
    declared = list(web_internals.declared_routes(app.routes))
    built = [(context.path, context.original_route) for context in iter_route_contexts(app.routes)]
    assert declared == built
    assert any(path and path.startswith("/scim/v2/") for path, _ in declared)

"""The packages' layers, read from the source (every import: at the top, inside functions,
under ``TYPE_CHECKING``).

* Plumbing (``web``, ``storage``) imports no domain package: a domain builds on the
  plumbing, never the other way round.
* No two packages import each other, directly or through others: each package can be
  read, tested and changed knowing only the packages below it.
* Only the transaction's owners commit (``storage/db.py``'s ``Database.session``, the
  request boundary ``web/routing.py``): services only flush.
* The application modules (``app``, ``models``: they import the
  domains) are imported by the command line only; the base modules (``config``,
  ``logging_setup``) import no package.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import questline

ROOT = Path(questline.__file__).parent
PLUMBING = frozenset({"web", "storage"})
APPLICATION = frozenset({"app", "models"})
APPLICATION_IMPORTERS = frozenset({"cli"})
BASE = frozenset({"config", "logging_setup"})


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. questline.web.openapi
    line: int
    target: str  # the imported module, e.g. questline.teams.schemas

    @property
    def source_unit(self) -> str:
        return _unit(self.module)

    @property
    def target_unit(self) -> str:
        return _unit(self.target)

    def __str__(self) -> str:
        path = self.module.replace(".", "/")
        return f"src/{path}.py:{self.line}: imports {self.target}"


def _unit(module: str) -> str:
    """The package (``teams``) or top-level module (``app``) a module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join([*base, node.module] if node.module else base)
    else:
        source = node.module or ""
    if source == "questline":  # from questline import models
        return [f"questline.{alias.name}" for alias in node.names]
    return [source]


def imports() -> Iterator[Import]:
    for path in sorted(ROOT.rglob("*.py")):
        module, is_package = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(node, module, is_package):
                    if target.startswith("questline.") and _unit(target) != _unit(module):
                        yield Import(module, node.lineno, target)


def _is_package(unit: str) -> bool:
    return (ROOT / unit).is_dir()


def _report(title: str, found: list[Import]) -> str:
    return "\n".join([title, *(f"  {item}" for item in found)])


def test_the_walk_sees_every_kind_of_import() -> None:
    found = list(imports())
    assert len(found) > 200
    sources = {item.source_unit for item in found}
    assert {"app", "web", "storage", "teams", "cli"} <= sources


def test_plumbing_imports_no_domain() -> None:
    found = [
        item
        for item in imports()
        if item.source_unit in PLUMBING
        and _is_package(item.target_unit)
        and item.target_unit not in PLUMBING
    ]
    if found:
        pytest.fail(_report("Plumbing (web/, storage/) imports a domain:", found), pytrace=False)


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(edges.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return components


def _loop(edges: dict[str, set[str]], start: str) -> list[str]:
    """A shortest loop from ``start`` back to itself (breadth first)."""
    paths = {successor: [start, successor] for successor in sorted(edges.get(start, ()))}
    queue = list(paths)
    while queue:
        node = queue.pop(0)
        if node == start:
            return paths[node]
        for successor in sorted(edges.get(node, ())):
            if successor not in paths:
                paths[successor] = [*paths[node], successor]
                queue.append(successor)
    return []


def test_no_import_cycle_between_packages() -> None:
    between = [
        item
        for item in imports()
        if _is_package(item.source_unit) and _is_package(item.target_unit)
    ]
    by_edge: dict[tuple[str, str], list[Import]] = {}
    for item in between:
        by_edge.setdefault((item.source_unit, item.target_unit), []).append(item)
    messages = []
    mutual = sorted((a, b) for a, b in by_edge if a < b and (b, a) in by_edge)
    for a, b in mutual:
        if b in PLUMBING and a not in PLUMBING:
            a, b = b, a
        if a in PLUMBING and b not in PLUMBING:  # the plumbing's side is the wrong one
            title = f"{a} <-> {b}: plumbing imports a domain that builds on it:"
            messages.append(_report(title, by_edge[a, b]))
        else:
            title = f"{a} <-> {b}: the packages import each other:"
            messages.append(_report(title, by_edge[a, b] + by_edge[b, a]))
    # Longer loops (a -> b -> c -> a), once the pairs above are left out.
    edges: dict[str, set[str]] = {}
    for a, b in by_edge:
        if (a, b) not in mutual and (b, a) not in mutual:
            edges.setdefault(a, set()).add(b)
    for component in _cycles(edges):
        loop = _loop(edges, min(component))
        hops = [by_edge[a, b][0] for a, b in itertools.pairwise(loop)]
        messages.append(_report(f"{' -> '.join(loop)}: the packages import in a loop:", hops))
    if messages:
        pytest.fail("\n\n".join(messages), pytrace=False)


def test_the_application_is_imported_by_the_command_line_only() -> None:
    found = [
        item
        for item in imports()
        if item.target_unit in APPLICATION
        and item.source_unit not in APPLICATION | APPLICATION_IMPORTERS
    ]
    if found:
        pytest.fail(
            _report("A package imports the application (app, models):", found),
            pytrace=False,
        )


def test_the_base_modules_import_no_package() -> None:
    found = [
        item for item in imports() if item.source_unit in BASE and item.target_unit not in BASE
    ]
    if found:
        pytest.fail(
            _report("A base module (config, logging_setup) imports more:", found), pytrace=False
        )


COMMITTERS = frozenset({"questline/storage/db.py", "questline/web/routing.py"})


def test_only_the_transaction_owners_commit() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).as_posix()
        if relative in COMMITTERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "commit"
            ):
                found.append(f"  src/{relative}:{node.lineno}: calls commit()")
    if found:
        pytest.fail("\n".join(["Only the transaction's owners commit:", *found]), pytrace=False)

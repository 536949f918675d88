"""No runtime registries between domains.

A domain that needs another one above it (progress before a discipline's tasks go, the
overview's season rank, the rankings' counted items, the outbox's consumers) gets it
explicitly: the module above imports the one below, or the application builds the value
once in ``create_app`` and hands it to whoever calls it (an argument, or ``app.state``).
A module-level table that ``create_app`` or an import fills would make the call graph
cyclic behind an acyclic import graph, and what runs would depend on what was imported
or started first.

Two checks: ``create_app`` changes no module-level container of ``questline`` (in a fresh
interpreter, so that the other tests' applications are not already there); and no
function of ``src/questline`` adds to a module-level container of its own module, but
for the few named below with their reason.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import questline

ROOT = Path(questline.__file__).parent

MUTATORS = frozenset({"append", "add", "extend", "insert", "update", "setdefault", "__setitem__"})
CONTAINERS = frozenset(
    {"list", "dict", "set", "defaultdict", "OrderedDict", "deque", "WeakSet", "Counter"}
)

NOT_REGISTRIES = {
    # A memo of what a model class declares: filled on first use, the same whatever
    # order things ran in, and read by nobody but its own module.
    ("questline/web/schemas.py", "_WIRE_NAMES"),
    # The wake-ups of running dispatchers: each subscribes when it starts (not at import
    # or in create_app) and unsubscribes when it stops; no domain's behaviour is looked
    # up there.
    ("questline/events/service.py", "_listeners"),
}

SNAPSHOT = """
import importlib, json, pkgutil, sys
import questline

modules = [
    importlib.import_module(info.name)
    for info in pkgutil.walk_packages(questline.__path__, "questline.")
]

def containers():
    found = {}
    for module in modules:
        for name, value in vars(module).items():
            if type(value) in (list, dict, set):
                found[f"{module.__name__}.{name}"] = (value, repr(value))
    return found

before = containers()
from questline.app import create_app
from questline.config import Settings
create_app(Settings(_env_file=None, data_dir=sys.argv[1], public_url="http://questline.test"))
after = containers()
changed = sorted(
    name for name, (value, text) in before.items() if repr(after[name][0]) != text
)
print(json.dumps({"changed": changed, "seen": len(before)}))
"""


def test_create_app_fills_no_module_level_table(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT, str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["seen"] > 50  # the walk saw the modules' tables
    if found["changed"]:
        pytest.fail(
            "\n".join(
                [
                    "create_app filled module-level tables (compose explicitly instead):",
                    *(f"  {name}" for name in found["changed"]),
                ]
            ),
            pytrace=False,
        )


def _is_container(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return name in CONTAINERS
    return False


def _module_containers(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and _is_container(statement.value):
            names |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
        elif (
            isinstance(statement, ast.AnnAssign)
            and statement.value is not None
            and _is_container(statement.value)
            and isinstance(statement.target, ast.Name)
        ):
            names.add(statement.target.id)
    return names


def _mutated(node: ast.AST, names: set[str]) -> tuple[str, int] | None:
    """The module-level container ``node`` adds to, if any, and the line."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MUTATORS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in names
    ):
        return node.func.value.id, node.lineno
    if isinstance(node, ast.Assign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id in names
            ):
                return target.value.id, node.lineno
    return None


def registries(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        names = {n for n in _module_containers(tree) if (relative, n) not in NOT_REGISTRIES}
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                hit = _mutated(node, names)
                if hit is not None:
                    name, line = hit
                    found.append(f"  src/{relative}:{line}: {function.name}() fills {name}")
    return found


def test_the_check_finds_a_registry(tmp_path: Path) -> None:
    package = tmp_path / "questline"
    package.mkdir()
    (package / "hooks.py").write_text(
        "_hooks: list[object] = []\n\n\ndef register(hook: object) -> None:\n"
        "    _hooks.append(hook)\n\n\n_by_name = {}\n\n\ndef name(key, hook):\n"
        "    _by_name[key] = hook\n",
        encoding="utf-8",
    )
    assert registries(package) == [
        "  src/questline/hooks.py:5: register() fills _hooks",
        "  src/questline/hooks.py:12: name() fills _by_name",
    ]


def test_no_function_fills_a_module_level_table() -> None:
    found = registries(ROOT)
    if found:
        pytest.fail(
            "\n".join(["A module-level table is filled at run time (a registry):", *found]),
            pytrace=False,
        )

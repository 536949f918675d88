"""Comments in ``src/`` give reasons: the story of a change (an issue number, a date, a
past measurement) belongs in the commit message, where it does not go stale beside the
code it explains; docs/performance.md keeps the reasons that still explain the code.

Read from the source's tokens (comments) and docstrings; Alembic's generated
``Create Date`` header of a migration is the one date allowed.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

import questline

ROOT = Path(questline.__file__).parent
STORY = re.compile(r"\bissue\s+\d+|\b20\d\d-\d\d-\d\d\b", re.IGNORECASE)
GENERATED = re.compile(r"^Create Date: .*$", re.MULTILINE)


def _docstrings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement in body:
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                yield statement.lineno, statement.value.value


def _comments(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def test_the_rule_sees_issue_numbers_and_dates(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Kept since issue 30."""\n'
        "x = 1  # measured 2026-11-27\n"
        'y = "issue 7 in a string is data, not a comment"\n',
        encoding="utf-8",
    )
    found = [line.split(": ", 1)[1] for line in _lines_of(sample, tmp_path)]
    assert found == ["issue 30", "2026-11-27"]


def _lines_of(path: Path, root: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    found = sorted([*_comments(source), *_docstrings(ast.parse(source))])
    return [
        f"{path.relative_to(root)}:{line}: {match[0]}"
        for line, text in found
        if (match := STORY.search(GENERATED.sub("", text)))
    ]


def _files_of(package: str) -> list[Path]:
    if package == ".":
        return sorted(ROOT.glob("*.py"))
    return sorted((ROOT / package).rglob("*.py"))


PACKAGES = [".", *sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").exists())]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_comment_tells_a_story(package: str) -> None:
    offending = [line for path in _files_of(package) for line in _lines_of(path, ROOT)]
    assert offending == [], "\n".join(offending)

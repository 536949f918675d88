"""The tenant rule, read from the source: in the modules where something from outside (a
launch, a callback, a SCIM token, a sign-in code, an invitation, a session cookie) is
turned into an organization, every statement on a tenant table either names its
organization (``<Table>.organization_id``) or sits in a function marked
``@finds_the_organization`` — the few, named look-ups that may see several
organizations' rows, each returning at most one from verified data. The progress an
operator's change of a global discipline withdraws in every organization is the one
other path across organizations (``@across_a_global_discipline``), named here too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import questline
from questline import models
from questline.storage.tenancy import GLOBAL_DISCIPLINE_MARKER, MARKER, SWEEP_MARKER

ROOT = Path(questline.__file__).parent
WAYS_IN = (
    "lti/flow.py",
    "lti/browser.py",
    "lti/deep_linking.py",
    "sso/flow.py",
    "sso/endpoints.py",
    "auth/sessions.py",
    "auth/authentication.py",
    "auth/scim_tokens.py",
    "auth/endpoints.py",
    "mail/endpoints.py",
    "mail/service.py",
)
ACROSS_A_GLOBAL_DISCIPLINE = ("progress/hooks.py",)
"""Modules whose statements across organizations follow an operator's change of a global
discipline (``@across_a_global_discipline``)."""
MARKERS = (MARKER, SWEEP_MARKER, GLOBAL_DISCIPLINE_MARKER)
STATEMENTS = frozenset({"select", "delete", "update"})
"""What reads or changes existing rows (an insert names its organization in its values)."""

TENANT_TABLES = frozenset(
    mapper.class_.__name__
    for mapper in models.Base.registry.mappers
    if "organization_id" in mapper.columns
)


def _decorated(function: ast.AST) -> bool:
    decorators = getattr(function, "decorator_list", [])
    return any(
        (isinstance(d, ast.Name) and d.id in MARKERS)
        or (isinstance(d, ast.Attribute) and d.attr in MARKERS)
        for d in decorators
    )


def _names_its_organization(statement: ast.AST, table: str) -> bool:
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "organization_id"
        and isinstance(node.value, ast.Name)
        and node.value.id == table
        for node in ast.walk(statement)
    )


def _outermost_chain(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The whole expression a statement call is built in (``select(T).where(...)…``)."""
    current = node
    while isinstance(parents.get(current), ast.Attribute | ast.Call):
        current = parents[current]
    return current


def unruly_statements(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[str] = []

    def visit(node: ast.AST, marked: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            marked = marked or _decorated(node)
        if (
            not marked
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in STATEMENTS
        ):
            tables = [a.id for a in node.args if isinstance(a, ast.Name) and a.id in TENANT_TABLES]
            chain = _outermost_chain(node, parents)
            for table in tables:
                if not _names_its_organization(chain, table):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {node.func.id}({table})")
        for child in ast.iter_child_nodes(node):
            visit(child, marked)

    visit(tree, False)
    return found


def test_the_rule_knows_the_tenant_tables() -> None:
    assert {"Member", "LtiPlatform", "DashboardSession", "Team"} <= TENANT_TABLES
    assert "Organization" not in TENANT_TABLES


def test_the_rule_sees_a_statement_that_forgets_its_organization(tmp_path: Path) -> None:
    sample = tmp_path / "sample_for_the_rule.py"
    sample.write_text(
        "async def leaky(session):\n"
        "    return await session.scalar(select(Member).where(Member.email == 'a'))\n"
        "async def scoped(session, org):\n"
        "    return await session.scalar(\n"
        "        select(Member).where(Member.organization_id == org, Member.email == 'a')\n"
        "    )\n"
        f"@{MARKER}\n"
        "async def named(session):\n"
        "    return await session.scalar(select(Member).where(Member.email == 'a'))\n",
        encoding="utf-8",
    )
    assert unruly_statements(sample, tmp_path) == ["sample_for_the_rule.py:2: select(Member)"]


@pytest.mark.parametrize("module", WAYS_IN + ACROSS_A_GLOBAL_DISCIPLINE)
def test_every_way_in_names_the_organization_or_is_a_named_look_up(module: str) -> None:
    assert unruly_statements(ROOT / module) == []


def _marked(path: Path, marker: str = MARKER) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(isinstance(d, ast.Name) and d.id == marker for d in node.decorator_list)
    ]


def test_the_named_look_ups_are_these_and_no_more() -> None:
    """A new look-up across organizations is a decision, reviewed here."""
    marked = sorted(m for path in sorted(ROOT.rglob("*.py")) for m in _marked(path))
    assert marked == [
        "auth/scim_tokens.py:find_live",
        "auth/sessions.py:end_session",
        "auth/sessions.py:exchange_code",
        "auth/sessions.py:find_session",
        "lti/deep_linking.py:spend_ticket",
        "lti/flow.py:_registrations",
        "lti/flow.py:registration_for",
        "lti/flow.py:spend_login",
        "sso/flow.py:is_sso_session",
        "sso/flow.py:spend_login",
    ]


def test_the_operators_path_across_organizations_is_this_and_no_more() -> None:
    """What an operator's change of a global discipline does in every organization runs
    as the every-organization role: one function, reviewed here."""
    marked = sorted(
        m for path in sorted(ROOT.rglob("*.py")) for m in _marked(path, GLOBAL_DISCIPLINE_MARKER)
    )
    assert marked == ["progress/hooks.py:before_tasks_removed"]

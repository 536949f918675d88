"""SCIM ``filter`` expressions (RFC 7644 §3.4.2.2) as SQL conditions.

``scim2_models.ScimFilter`` parses and checks the expression; this visitor turns its tree
into a SQLAlchemy condition on the members' or teams' table, so that a list is filtered,
counted and paged by the database. The attributes that can be filtered are the ones
Questline keeps (``FILTERABLE``); any other is refused with ``invalidFilter``.
Comparisons follow each attribute's case rule: ``externalId`` and ``id`` are case-exact,
the rest ignore case.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scim2_models import InvalidFilterException, ScimFilter
from scim2_models.path import (
    AttrPath,
    CompareOperator,
    Comparison,
    FilterNode,
    FilterVisitor,
    LogicalExpr,
    LogicalOperator,
    Not,
    Present,
    ValuePath,
)
from sqlalchemy import ColumnElement, and_, exists, false, func, not_, or_, true

from questline.members.models import Member, TeamMembership
from questline.teams.models import Team

MAX_FILTER_LENGTH = 1500
"""A longer filter is refused before it is parsed (a directory's filters are short)."""


@dataclass(frozen=True, slots=True)
class Attribute:
    """How one filterable attribute reads in SQL."""

    column: Callable[[], Any]
    kind: str
    """``text`` (case-insensitive), ``exact`` (case-exact text), ``key`` (a column that
    holds the value case-folded), ``id``, ``bool`` or ``members``."""


USER_ATTRIBUTES: dict[str, Attribute] = {
    "id": Attribute(lambda: Member.id, "id"),
    "username": Attribute(lambda: func.coalesce(Member.user_name, Member.email), "text"),
    "emails.value": Attribute(lambda: Member.email_key, "key"),
    "emails": Attribute(lambda: Member.email_key, "key"),
    "externalid": Attribute(lambda: Member.external_id, "exact"),
    # Null (never set) is active.
    "active": Attribute(lambda: func.coalesce(Member.active, true()), "bool"),
    "name.givenname": Attribute(lambda: Member.given_name, "text"),
}
GROUP_ATTRIBUTES: dict[str, Attribute] = {
    "id": Attribute(lambda: Team.id, "id"),
    "displayname": Attribute(lambda: Team.name_key, "key"),
    "externalid": Attribute(lambda: Team.external_id, "exact"),
    "members.value": Attribute(lambda: Team.id, "members"),
    "members": Attribute(lambda: Team.id, "members"),
}


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class SqlFilter(FilterVisitor[ColumnElement[bool]]):
    def __init__(self, attributes: dict[str, Attribute], prefix: str = "") -> None:
        self.attributes = attributes
        self.prefix = prefix

    def _attribute(self, path: AttrPath) -> tuple[str, Attribute]:
        name = path.attr if path.sub_attr is None else f"{path.attr}.{path.sub_attr}"
        if self.prefix:
            name = f"{self.prefix}.{name}"
        found = self.attributes.get(name.lower())
        if found is None:
            raise InvalidFilterException(
                detail=f"Filtering on {name!r} is not supported; filter on "
                + ", ".join(sorted({k.split(".")[0] for k in self.attributes}))
                + "."
            )
        return name, found

    def visit_comparison(self, node: Comparison) -> ColumnElement[bool]:
        name, attribute = self._attribute(node.attr_path)
        return compare(attribute, node.op, node.value, name)

    def visit_present(self, node: Present) -> ColumnElement[bool]:
        _, attribute = self._attribute(node.attr_path)
        if attribute.kind in ("id", "bool", "members"):
            if attribute.kind == "members":
                return _has_members()
            present: ColumnElement[bool] = attribute.column().is_not(None)
            return present
        column = attribute.column()
        return and_(column.is_not(None), column != "")

    def visit_not(self, node: Not) -> ColumnElement[bool]:
        return not_(self.visit(node.expr))

    def visit_logical_expr(self, node: LogicalExpr) -> ColumnElement[bool]:
        terms = [self.visit(term) for term in node.terms]
        return and_(*terms) if node.op == LogicalOperator.and_ else or_(*terms)

    def visit_value_path(self, node: ValuePath) -> ColumnElement[bool]:
        inner = SqlFilter(self.attributes, prefix=node.attr_path.attr)
        return inner.visit(node.val_filter)


def _has_members() -> ColumnElement[bool]:
    return exists().where(
        TeamMembership.organization_id == Team.organization_id,
        TeamMembership.team_id == Team.id,
    )


def compare(
    attribute: Attribute, op: CompareOperator, value: Any, name: str
) -> ColumnElement[bool]:
    if attribute.kind == "members":
        member_id = _uuid_or_none(value)
        if op is not CompareOperator.eq:
            raise InvalidFilterException(detail=f"{name} takes only eq.")
        if member_id is None:
            return false()
        return exists().where(
            TeamMembership.organization_id == Team.organization_id,
            TeamMembership.team_id == Team.id,
            TeamMembership.member_id == member_id,
        )
    column = attribute.column()
    if attribute.kind == "id":
        if op not in (CompareOperator.eq, CompareOperator.ne):
            raise InvalidFilterException(detail=f"{name} takes only eq and ne.")
        found = _uuid_or_none(value)
        matched = column == found if found is not None else false()
        return matched if op is CompareOperator.eq else not_(matched)
    if attribute.kind == "bool":
        if op not in (CompareOperator.eq, CompareOperator.ne) or not isinstance(value, bool):
            raise InvalidFilterException(detail=f"{name} takes eq or ne with true or false.")
        flag: ColumnElement[bool] = (
            column.is_(value) if op is CompareOperator.eq else column.is_not(value)
        )
        return flag
    if not isinstance(value, str):
        raise InvalidFilterException(detail=f"{name} compares with a string.")
    if attribute.kind == "key":
        text = value.strip().casefold()
    elif attribute.kind == "text":
        column, text = func.lower(column), value.lower()
    else:
        text = value
    return _string_comparison(column, op, text)


def _string_comparison(
    column: ColumnElement[Any], op: CompareOperator, text: str
) -> ColumnElement[bool]:
    if op is CompareOperator.eq:
        return column == text
    if op is CompareOperator.ne:
        return or_(column != text, column.is_(None))
    if op is CompareOperator.co:
        return column.like(f"%{_escape_like(text)}%", escape="\\")
    if op is CompareOperator.sw:
        return column.like(f"{_escape_like(text)}%", escape="\\")
    if op is CompareOperator.ew:
        return column.like(f"%{_escape_like(text)}", escape="\\")
    if op is CompareOperator.gt:
        return column > text
    if op is CompareOperator.ge:
        return column >= text
    if op is CompareOperator.lt:
        return column < text
    if op is CompareOperator.le:
        return column <= text
    raise InvalidFilterException(detail=f"The operator {op.value} is not supported.")


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def parse(expression: str | None) -> FilterNode | None:
    """The parsed filter, or None without one; ``invalidFilter`` when it does not parse."""
    if expression is None or not expression.strip():
        return None
    if len(expression) > MAX_FILTER_LENGTH:
        raise InvalidFilterException(
            detail=f"The filter is longer than {MAX_FILTER_LENGTH} characters."
        )
    try:
        return ScimFilter(expression).ast
    except InvalidFilterException:
        raise
    except Exception as exc:  # the grammar's own errors: a malformed filter
        raise InvalidFilterException(detail=f"The filter does not parse: {exc}") from None


def user_condition(expression: str | None) -> ColumnElement[bool]:
    tree = parse(expression)
    return true() if tree is None else SqlFilter(USER_ATTRIBUTES).visit(tree)


def group_condition(expression: str | None) -> ColumnElement[bool]:
    tree = parse(expression)
    return true() if tree is None else SqlFilter(GROUP_ATTRIBUTES).visit(tree)

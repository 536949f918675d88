"""A JSON bulk request: an array of team creation inputs, exactly as ``POST /team`` takes.

Every item is validated with the same ``TeamCreate`` schema, so a problem is named by
the item's index and field (``[3].name``), and every problem of every item is reported
at once.
"""

from __future__ import annotations

from typing import Any

import pydantic_core
from pydantic import TypeAdapter, ValidationError

from questline.bulk.schemas import (
    BulkPlan,
    ItemError,
    PlannedTeam,
    check_team_count,
    nothing_to_create,
)
from questline.teams.schemas import TeamCreate
from questline.teams.service import name_key
from questline.web.errors import BadRequest, FieldError, Unprocessable, field_errors

_ITEMS = TypeAdapter(list[TeamCreate])
_ITEM = TypeAdapter(TeamCreate)


def parse_json(body: bytes, *, max_teams: int) -> BulkPlan:
    try:
        data = pydantic_core.from_json(body)
    except ValueError as exc:
        raise BadRequest(f"The body is not valid JSON: {exc}.") from None
    if not isinstance(data, list):
        raise Unprocessable(
            "Send a JSON array of teams (each as for POST /team), or text/csv.",
            errors=[FieldError(field="body", message="Expected an array of teams.")],
        )
    if not data:
        raise nothing_to_create()
    check_team_count(len(data), max_teams=max_teams)
    items, errors = _validate(data)
    teams = [
        PlannedTeam(
            name=item.name,
            tags=item.tags,
            position=index,
            name_field=f"[{index}].name",
            member_ids=item.members,
        )
        for index, item in items
    ]
    return BulkPlan(teams=teams, errors=errors + _duplicate_names(teams))


def _validate(data: list[Any]) -> tuple[list[tuple[int, TeamCreate]], list[ItemError]]:
    """The valid items with their indices, and every problem of the others."""
    try:
        return list(enumerate(_ITEMS.validate_python(data))), []
    except ValidationError as exc:
        raw = exc.errors()
    errors = [
        ItemError(int(e["loc"][0]), f.field, f.message)
        for e, f in zip(raw, field_errors(raw), strict=True)
    ]
    bad = {error.position for error in errors}
    valid = [(i, _ITEM.validate_python(item)) for i, item in enumerate(data) if i not in bad]
    return valid, errors


def _duplicate_names(teams: list[PlannedTeam]) -> list[ItemError]:
    first: dict[str, int] = {}
    errors = []
    for team in teams:
        key = name_key(team.name)
        if key in first:
            errors.append(
                ItemError(
                    team.position,
                    team.name_field,
                    f"Another team of this request, [{first[key]}], has this name "
                    "(names ignore case).",
                )
            )
        else:
            first[key] = team.position
    return errors

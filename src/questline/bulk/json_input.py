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
    ErrorLog,
    ItemError,
    PlannedTeam,
    check_team_count,
    first_problems,
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
            invite=item.invite,
        )
        for index, item in items
    ]
    listed, total = first_problems(errors, _duplicate_names(teams))
    return BulkPlan(teams=teams, errors=listed, error_total=total)


CHUNK = 256
"""Items validated in one call: pydantic holds the GIL for a whole call, so a list of
10,000 items validated at once froze the event loop's thread for half a second."""


def _validate(data: list[Any]) -> tuple[list[tuple[int, TeamCreate]], list[ItemError]]:
    """The valid items with their indices, and the first problems of the others."""
    valid: list[tuple[int, TeamCreate]] = []
    errors = ErrorLog()
    for start in range(0, len(data), CHUNK):
        chunk = data[start : start + CHUNK]
        try:
            valid.extend(enumerate(_ITEMS.validate_python(chunk), start))
            continue
        except ValidationError as exc:
            raw = exc.errors()
        bad: set[int] = set()
        for error in raw:
            index = start + int(error["loc"][0])
            bad.add(index)
            [problem] = field_errors([{**error, "loc": (index, *error["loc"][1:])}])
            errors.append(ItemError(index, problem.field, problem.message))
        valid.extend(
            (start + i, _ITEM.validate_python(item))
            for i, item in enumerate(chunk)
            if start + i not in bad
        )
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

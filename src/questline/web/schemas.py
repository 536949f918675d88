"""Wire conventions shared by every domain (DESIGN §2).

* Output uses PascalCase names (``Id``, ``OrganizationId``) for every resource.
* Input names are matched case-insensitively; unknown input fields are rejected (422).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    PlainSerializer,
    StringConstraints,
    model_validator,
)
from pydantic.alias_generators import to_pascal


def _rfc3339(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


UtcDateTime = Annotated[dt.datetime, PlainSerializer(_rfc3339, return_type=str)]
"""A timestamp written as RFC 3339 in UTC, e.g. ``2026-11-22T10:00:00Z``."""


class OutputModel(BaseModel):
    """Base of every response body: PascalCase names, read from ORM attributes."""

    model_config = ConfigDict(
        alias_generator=to_pascal, populate_by_name=True, from_attributes=True
    )


class InputModel(BaseModel):
    """Base of every request body: case-insensitive names, unknown names rejected."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    @model_validator(mode="before")
    @classmethod
    def _match_names_case_insensitively(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        canonical, wires = _wire_names(cls)
        if data.keys() <= wires:
            return data  # already the wire names (bulk requests: thousands of items)
        matched: dict[str, Any] = {}
        for key, value in data.items():
            wire = canonical.get(key.lower(), key) if isinstance(key, str) else key
            if wire in matched:
                raise ValueError(f"Field {wire!r} is given more than once (names ignore case).")
            matched[wire] = value
        return matched


_WIRE_NAMES: dict[type[BaseModel], tuple[dict[str, str], frozenset[str]]] = {}


def _wire_names(model: type[BaseModel]) -> tuple[dict[str, str], frozenset[str]]:
    """The model's wire names by lower-case spelling, and as a set (once a model)."""
    names = _WIRE_NAMES.get(model)
    if names is None:
        by_lower = {(f.alias or n).lower(): f.alias or n for n, f in model.model_fields.items()}
        names = by_lower, frozenset(by_lower.values())
        _WIRE_NAMES[model] = names
    return names


PRINTABLE = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
"""No control characters but tab and line breaks (PostgreSQL refuses NUL in text)."""


def text(max_length: int) -> StringConstraints:
    """Constraints of a required text: trimmed, then 1 to ``max_length`` printable characters."""
    return StringConstraints(
        strip_whitespace=True, min_length=1, max_length=max_length, pattern=PRINTABLE
    )


def as_aware(value: dt.datetime) -> dt.datetime:
    return value.astimezone(dt.UTC)


InputDateTime = Annotated[AwareDatetime, AfterValidator(as_aware)]
"""A timestamp given with an offset (RFC 3339); stored as UTC."""

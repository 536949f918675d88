"""Wire conventions shared by every domain (DESIGN §2).

* Output uses PascalCase names (``Id``, ``OrganizationId``) for every resource.
* Input names are matched case-insensitively; unknown input fields are rejected (422).
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    Strict,
    StringConstraints,
    model_validator,
)
from pydantic.alias_generators import to_pascal

from questline.timeformat import rfc3339
from questline.web.errors import CONTROL_CHARACTERS_PATTERN

UtcDateTime = Annotated[dt.datetime, PlainSerializer(rfc3339, return_type=str)]
"""A timestamp written as RFC 3339 in UTC, e.g. ``2026-11-22T10:00:00Z``."""


def examples(*values: Any) -> ConfigDict:
    """A model's ``model_config`` with its examples for the API document (JSON Schema's
    ``examples``): each valid for the model (tests/web/test_openapi_document.py), the
    first shown with every body of the model (``web.openapi.polish_document``). Input
    examples use the documented casing (docs/api.md), output examples PascalCase. A
    subclass sets its own: it would show its parent's otherwise."""
    return ConfigDict(json_schema_extra={"examples": list(values)})


class OutputModel(BaseModel):
    """Base of every response body: PascalCase names, read from ORM attributes."""

    model_config = ConfigDict(
        alias_generator=to_pascal, populate_by_name=True, from_attributes=True
    )


Shown = TypeVar("Shown", bound=OutputModel)


def shown_row(model: type[Shown], row: object, **computed: Any) -> Shown:
    """The response body ``model`` of a stored ``row``: each field is the row's attribute
    of the same name, but for the fields given in ``computed`` (counts, phases, URLs,
    renamed or hidden columns). One copy rule for every domain's ``to_schema``, so that
    a field added to a model and its row needs no third list to be shown."""
    if unknown := computed.keys() - model.model_fields.keys():
        raise TypeError(f"{model.__name__} has no fields {sorted(unknown)}")
    values = {
        name: computed[name] if name in computed else getattr(row, name)
        for name in model.model_fields
    }
    return model.model_validate(values)


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


PRINTABLE = CONTROL_CHARACTERS_PATTERN
"""No control characters but tab and line breaks (PostgreSQL refuses NUL in text)."""


def text(max_length: int) -> StringConstraints:
    """Constraints of a required text: trimmed, then 1 to ``max_length`` printable characters."""
    return StringConstraints(
        strip_whitespace=True, min_length=1, max_length=max_length, pattern=PRINTABLE
    )


REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""In names and titles: control characters (C0 and C1, tab and line breaks included),
format characters (zero-width spaces and joiners, bidi overrides and isolates, byte
order marks), surrogates, private-use and unassigned characters, and line/paragraph
separators (docs/reliability.md, "Strict input")."""


def refuse_invisible(value: str) -> str:
    """A name shows on one line as it reads: nothing invisible, nothing that reorders it."""
    for char in value:
        if unicodedata.category(char) in REFUSED_CATEGORIES:
            raise ValueError(
                f"Names may not hold invisible or control characters (U+{ord(char):04X})."
            )
    return value


def normalized_name(max_length: int) -> AfterValidator:
    """After ``text(n)``: NFKC (a fullwidth R becomes a plain R), refuse invisible
    characters, and count the length again on the normalized text."""

    def normalize(value: str) -> str:
        normalized = refuse_invisible(unicodedata.normalize("NFKC", value).strip())
        if not normalized:
            raise ValueError("The name is empty once normalized (NFKC) and trimmed.")
        if len(normalized) > max_length:
            raise ValueError(
                f"At most {max_length} characters once normalized (NFKC); "
                f"this one has {len(normalized)}."
            )
        return normalized

    return AfterValidator(normalize)


Name = Annotated[str, text(100), normalized_name(100)]
"""A name people give: an organization's, a season's, a team's, a member's given name.
Trimmed, NFKC-normalized, nothing invisible, 1 to 100 characters before and after."""


def fits_when_case_folded(max_length: int) -> AfterValidator:
    def check(value: str) -> str:
        if len(value.casefold()) > max_length:
            raise ValueError(
                f"At most {max_length} characters when compared ignoring case "
                f"('ß' counts as 'ss'); this one has {len(value.casefold())}."
            )
        return value

    return AfterValidator(check)


RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def _rfc3339_string(value: Any) -> Any:
    """Timestamps only as RFC 3339 strings: not numbers (``to=0.5`` is no timestamp)."""
    if isinstance(value, dt.datetime):
        return value  # built in Python, not received
    if not isinstance(value, str) or not RFC3339.match(value):
        raise ValueError(
            "Give a timestamp as an RFC 3339 string with an offset, e.g. 2026-11-22T10:00:00Z."
        )
    return value


def as_aware(value: dt.datetime) -> dt.datetime:
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(
            "The timestamp is outside the years 0001 to 9999 once converted to UTC."
        ) from None


InputDateTime = Annotated[
    AwareDatetime,
    BeforeValidator(_rfc3339_string),
    AfterValidator(as_aware),
]
"""A timestamp given as an RFC 3339 string with an offset; stored as UTC."""


def _true_or_false(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ValueError("Give true or false.")


StrictBoolean = Annotated[bool, Strict()]
"""A JSON boolean: ``true`` or ``false``, never 0, 1, "yes" or "true" as a string."""
QueryBoolean = Annotated[bool, BeforeValidator(_true_or_false)]
"""A query parameter that is ``true`` or ``false`` exactly."""

"""``If-Match`` as the API document states it and the routes check it (RFC 9110 §13.1.1):
``*`` or a comma-separated list of entity tags (``"…"`` or ``W/"…"``). A value of
another form is 422, like any malformed parameter; a well-formed tag that is not the
current ``ETag`` is 412 (which no schema can state: it depends on the resource)."""

from __future__ import annotations

from typing import Any

from fastapi import Header
from pydantic import WithJsonSchema

ENTITY_TAG = r'(?:W/)?"[!#-~]*"'
"""An entity tag: optionally weak, quoted, of visible ASCII but the quote."""
IF_MATCH_PATTERN = rf"^(?:\*|{ENTITY_TAG}(?:[ \t]*,[ \t]*{ENTITY_TAG})*)$"
IF_MATCH_MAX_LENGTH = 200
IF_MATCH_SCHEMA = WithJsonSchema(
    {"type": "string", "pattern": IF_MATCH_PATTERN, "maxLength": IF_MATCH_MAX_LENGTH}
)
"""The header's schema: a string of that form (absent when not sent; never ``null``, which
a header cannot be), beside ``if_match_header`` in the parameter's ``Annotated``."""


def if_match_header(resource: str) -> Any:
    """The ``Header`` declaration of an ``If-Match`` guarding a change of ``resource``."""
    return Header(
        max_length=IF_MATCH_MAX_LENGTH,
        pattern=IF_MATCH_PATTERN,
        description=f"The `ETag` you read (or `*`); 412 when the {resource} changed since.",
        examples=['"3f2b9c1e8d7a4b6c9e0f1a2b3c4d5e6f.2"'],
    )

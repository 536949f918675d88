"""The one way a timestamp is written as text: RFC 3339 in UTC with ``Z``.

A module of its own that imports no package, so that the plumbing (``web``'s response
models), the domains (audit entries, xAPI statements, LTI scores) and any later user can
share it without an import between them.
"""

from __future__ import annotations

import datetime as dt


def rfc3339(value: dt.datetime) -> str:
    """``value`` in UTC as RFC 3339 (ISO 8601 with ``Z``), microseconds when it has
    any."""
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")

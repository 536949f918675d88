"""How many bytes a memo keeps alive, to count it in the read model's bound.

A value may say it itself (``memo_bytes``: the leaderboard order's compact arrays);
otherwise the objects it holds are walked — mappings, sequences, sets and dataclass
fields — and ``sys.getsizeof`` of each is added once. The walk stops after ``MAX_OBJECTS``
objects and scales what it saw by the share it did not reach, so a large value costs a
bounded walk (a memo is measured once, when it is built).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

MAX_OBJECTS = 20_000
_ATOMS = (str, bytes, int, float, bool, type(None))


def _children(value: Any) -> Iterable[Any]:
    """What ``value`` holds: a mapping's keys and values, a sequence's or set's items, a
    dataclass's fields. Anything else (an atom, a UUID, an enum member) counts alone."""
    if isinstance(value, _ATOMS):
        return ()
    if isinstance(value, Mapping):
        return [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple, set, frozenset)):
        return value
    fields = getattr(type(value), "__dataclass_fields__", None)
    if fields is not None:
        return [getattr(value, name) for name in fields]
    return ()


def footprint(value: Any) -> int:
    """Approximate bytes of ``value`` and everything it holds (see the module)."""
    declared = getattr(value, "memo_bytes", None)
    if isinstance(declared, int):
        return declared
    seen: set[int] = set()
    pending: list[Any] = [value]
    total = 0
    reached = 0
    while pending and len(seen) < MAX_OBJECTS:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        children = _children(item)
        reached += 1
        pending.extend(children)
    if pending:  # stopped early: what was not walked is assumed alike
        total = total * (reached + len(pending)) // max(1, reached)
    return total

"""What a write moved, so that cached bodies it did not touch survive it.

A write bumps its organization's version, and an entry is served only at the version it
was built at. Most writes say nothing more: every entry of the organization is then
stale. A write that knows exactly what it changed says so in **scopes** (the progress
ledger: the teams it wrote to, and ``SCORES`` when a completion moved); a body declares
the scopes it is built from (``Entry.depends``). An entry built at version ``v`` is still
true at ``V`` when this process knows what each version in ``v+1 … V`` moved, and none
of those moves is a scope the entry depends on: it is then carried to ``V`` as it is
(``ReadModel.carry``), with no statement.

What a process does not know is taken as "anything moved": a version learned from
another process (a notification, a poll) carries no scopes, nor does a write that did
not say them, nor a version older than what the log keeps. So a missing or wrong
declaration can only be one that says *too much*; the one way to serve a stale body is
a write that says too little, which is why only a few writes say anything
(docs/performance.md, "Reads that survive writes").
"""

from __future__ import annotations

import functools
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable

Scopes = frozenset[str]

SCORES = "scores"
"""Any ranked team's score, tasks completed or reaching time: the leaderboard's order,
its graphs, ranks, the team list's scores."""

RANKS = "ranks"
"""Any ranked team's place in the overall order, when the write cannot say which moved
(an adjustment, a hint's charge). A ledger write says instead how its teams moved
(``step``), and a body that shows one team's rank depends on where that team stands
(``placed``): it is kept unless a step crossed that place."""

STEP = "step:"
PLACED = "placed:"

NOTHING: Scopes = frozenset()
"""What a body built from none of the scopes writes declare depends on (only writes that
say nothing make it stale: a discipline's document)."""

KEPT_VERSIONS = 256
"""Versions an organization's log keeps: an entry older than that is built again."""
KEPT_ORGANIZATIONS = 10_000
"""Organizations whose logs are kept; the least recently written lose theirs first."""


def team(team_id: uuid.UUID) -> str:
    """The scope of one team's own state: its row, completions, attempts and hints."""
    return f"team:{team_id.hex}"


def step(before: tuple[int, float], after: tuple[int, float]) -> str:
    """A team's move in the overall order, from one place key to another
    (``teams.ranking.place_key``)."""
    return f"{STEP}{before[0]}:{before[1]!r}:{after[0]}:{after[1]!r}"


def placed(key: tuple[int, float]) -> str:
    """Where a ranked team stands (its ``place_key``): a body showing its rank depends
    on it."""
    return f"{PLACED}{key[0]}:{key[1]!r}"


@functools.lru_cache(maxsize=4096)
def _keys(scope: str) -> tuple[tuple[int, float], ...] | None:
    """The place keys a ``step`` or ``placed`` scope names (None: it names none, as a
    malformed scope from a notification would)."""
    parts = scope.split(":")[1:]
    try:
        return tuple((int(parts[i]), float(parts[i + 1])) for i in range(0, len(parts), 2))
    except (ValueError, IndexError):
        return None


def crossed(step_scope: str, placed_scope: str) -> bool:
    """Whether a team's ``step`` may change the rank of the team ``placed`` there: it
    was ahead and is not any more, or the other way round. At an equal key the names
    decide, which neither scope knows: that counts as crossed, as does a scope that
    cannot be read."""
    steps, places = _keys(step_scope), _keys(placed_scope)
    if steps is None or places is None or len(steps) != 2 or len(places) != 1:
        return True
    before, after = steps
    (there,) = places
    if there in (before, after):
        return True
    return (before < there) != (after < there)


def always(*scopes: str) -> Callable[[uuid.UUID | None], Scopes]:
    """The scopes of a body whatever its path names (``CachedRead``'s ``depends``)."""
    fixed = frozenset(scopes)
    return lambda _resource: fixed


SCORED = frozenset({SCORES})
"""What a ranking is built from."""


def on_team(*also: str) -> Callable[[uuid.UUID | None], Scopes]:
    """The scopes of a body about the path's team (``CachedRead``'s ``resource``),
    and ``also`` these."""
    extra = frozenset(also)

    def depends(team_id: uuid.UUID | None) -> Scopes:
        return extra if team_id is None else extra | {team(team_id)}

    return depends


class MovedLog:
    """By organization, what each recent version moved, as this process learned it."""

    def __init__(self) -> None:
        self._orgs: OrderedDict[uuid.UUID, dict[int, Scopes | None]] = OrderedDict()

    def record(self, organization_id: uuid.UUID, version: int, scopes: Scopes | None) -> None:
        """``version`` moved ``scopes`` (``None``: anything)."""
        versions = self._orgs.get(organization_id)
        if versions is None:
            versions = self._orgs[organization_id] = {}
            if len(self._orgs) > KEPT_ORGANIZATIONS:
                self._orgs.popitem(last=False)
        else:
            self._orgs.move_to_end(organization_id)
        versions[version] = scopes
        if len(versions) > KEPT_VERSIONS:
            del versions[min(versions)]

    def untouched(
        self, organization_id: uuid.UUID, since: int, until: int, depends: Iterable[str]
    ) -> bool:
        """Whether every version after ``since`` up to ``until`` is known to have moved
        nothing of ``depends``."""
        if until - since > KEPT_VERSIONS:
            return False
        versions = self._orgs.get(organization_id)
        if versions is None:
            return False
        wanted = frozenset(depends)
        places = [scope for scope in wanted if scope.startswith(PLACED)]
        for version in range(since + 1, until + 1):
            scopes = versions.get(version)
            if scopes is None or not scopes.isdisjoint(wanted):
                return False
            if places and any(
                crossed(moved, place)
                for moved in scopes
                if moved.startswith(STEP)
                for place in places
            ):
                return False
        return True

    def clear(self) -> None:
        self._orgs.clear()

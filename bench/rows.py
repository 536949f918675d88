"""The benchmark's rows: one small declarative entry per measured endpoint.

A row names its wrk script, the request it sends, the ids it picks from, the role
of its token, and what the pre-flight request must answer. Adding an endpoint to
the benchmark is adding an entry here. A row whose route is not in the service's
OpenAPI document (not built yet) is reported as skipped, not failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

IdSource = Literal["none", "teams", "disciplines", "progress_pairs"]


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    """As printed: method and path, with ``{id}`` for a per-request id."""
    script: str
    """The wrk script in bench/lua/."""
    route: tuple[str, str]
    """(method, OpenAPI path) that must exist for the row to run."""
    path: str = ""
    """For get.lua: the path sent, ``{id}`` replaced by a random id of ``ids``."""
    ids: IdSource = "none"
    role: Literal["member", "admin"] = "member"
    expect: tuple[int, ...] = (200,)
    """Statuses the pre-flight request may answer."""
    only_at: int | None = None
    """Measured at this number of teams only."""
    slope_goal: bool = False
    """Held to: p50 at 100,000 teams at most twice p50 at 1,000 teams."""
    ratio_goal: float | None = None
    """Held to (on PostgreSQL): requests/s at least this share of the bare endpoint's."""
    writes: bool = False
    """Changes data: measured after the reads, in this table's order."""
    min_seconds: float = 0
    """Measured at least this long (a request that takes seconds needs a longer window
    than the quick mode's to complete a few)."""


def read(path: str, route: str | None = None, *, name: str = "", **options: Any) -> Row:
    """A ``GET`` row sent by get.lua; ``route`` is the OpenAPI path when it differs."""
    return Row(
        name=name or f"GET {path}",
        script="get.lua",
        route=("get", route or path.split("?")[0]),
        path=path,
        **options,
    )


BARE = read("/healthz", name="GET /healthz (bare)")

ROWS: list[Row] = [
    read("/team?limit=100", slope_goal=True),
    read("/team", name="GET /team (all)", only_at=1_000),
    read(
        "/team/{id}/overview",
        "/team/{team_id}/overview",
        ids="teams",
        slope_goal=True,
        ratio_goal=0.40,
    ),
    read("/team/{id}", "/team/{team_id}", ids="teams", slope_goal=True),
    read("/leaderboard?limit=50", slope_goal=True, ratio_goal=0.40),
    read("/leaderboard/graph?top=10", slope_goal=True),
    read("/discipline/{id}", "/discipline/{discipline_id}", ids="disciplines", slope_goal=True),
    Row(
        name="POST /team/{id}/progress + DELETE …/{taskId}",
        script="progress.lua",
        route=("post", "/team/{team_id}/progress"),
        ids="progress_pairs",
        role="admin",
        expect=(200, 201),
        writes=True,
    ),
    Row(
        name="POST /team/bulk (1,000 teams)",
        script="bulk.lua",
        route=("post", "/team/bulk"),
        role="admin",
        expect=(201,),
        writes=True,
        min_seconds=10,
    ),
]

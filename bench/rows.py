"""The benchmark's rows: one small declarative entry per measured endpoint.

A row names its wrk script, the request it sends, the ids it picks from, the role
of its token, and what the pre-flight request must answer. Adding an endpoint to
the benchmark is adding an entry here. A row whose route is not in the service's
OpenAPI document (not built yet) is reported as skipped, not failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


BARE = Row(
    name="GET /healthz (bare)",
    script="get.lua",
    route=("get", "/healthz"),
    path="/healthz",
)

ROWS: list[Row] = [
    Row(
        name="GET /team?limit=100",
        script="get.lua",
        route=("get", "/team"),
        path="/team?limit=100",
        slope_goal=True,
    ),
    Row(
        name="GET /team (all)",
        script="get.lua",
        route=("get", "/team"),
        path="/team",
        only_at=1_000,
    ),
    Row(
        name="GET /team/{id}/overview",
        script="get.lua",
        route=("get", "/team/{team_id}/overview"),
        path="/team/{id}/overview",
        ids="teams",
        slope_goal=True,
        ratio_goal=0.40,
    ),
    Row(
        name="GET /team/{id}",
        script="get.lua",
        route=("get", "/team/{team_id}"),
        path="/team/{id}",
        ids="teams",
        slope_goal=True,
    ),
    Row(
        name="GET /leaderboard?limit=50",
        script="get.lua",
        route=("get", "/leaderboard"),
        path="/leaderboard?limit=50",
        slope_goal=True,
        ratio_goal=0.40,
    ),
    Row(
        name="GET /leaderboard/graph?top=10",
        script="get.lua",
        route=("get", "/leaderboard/graph"),
        path="/leaderboard/graph?top=10",
        slope_goal=True,
    ),
    Row(
        name="GET /discipline/{id}",
        script="get.lua",
        route=("get", "/discipline/{discipline_id}"),
        path="/discipline/{id}",
        ids="disciplines",
        slope_goal=True,
    ),
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

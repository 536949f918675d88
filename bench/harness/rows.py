"""The benchmark's rows: one small declarative entry per measured endpoint.

A row names its wrk script, the request it sends, the ids it picks from, the role
of its token, and what the pre-flight request must answer. Adding an endpoint to
the benchmark is adding an entry here. A row whose route is not in the service's
OpenAPI document (not built yet) is reported as skipped, not failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from bench.dataset.rules import BRACKET, LIVE_SEASON_ID, SEASON_ID

IdSource = Literal["none", "teams", "disciplines", "progress_pairs", "attempts", "hints"]


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    """As printed: method and path, with ``{id}`` for a per-request id."""
    script: str
    """The wrk script in bench/harness/lua/."""
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
    """Held to (on both backends): requests/s at least this share of the bare endpoint's
    (issue 14's table)."""
    floor_goal: float | None = None
    """Held to: requests/s at least this share of the floor's (a read-model hit against
    the plain ASGI callable answering the same bytes: harness/floor.py)."""
    revalidate: bool = False
    """Sends the ETag of a first answer as ``If-None-Match`` (every answer is a 304)."""
    read_after: str = ""
    """progress.lua: this path is read right after every write (a cold read-model entry)."""
    reads_per_write: int = 1
    """progress.lua with ``read_after``: this many reads follow each write."""
    mix_goal: float | None = None
    """Held to: the reads a second in this mix at least this share of the requests a
    second of ``MIX_READ`` alone, same server, same run (``mix_ratio``)."""
    writes: bool = False
    """Changes data: measured after the reads, in this table's order."""
    min_seconds: float = 0
    """Measured at least this long (a request that takes seconds needs a longer window
    than the quick mode's to complete a few)."""
    learner: Literal["", "wrong", "right", "hint"] = ""
    """learners.lua: the learner's write it sends (harness/learners.py sets them up)."""
    progress_goal: float | None = None
    """Held to: a request costs at most this many times ``PROGRESS_WRITE``'s, same run
    (that row's requests/s over this row's)."""


def read(path: str, route: str | None = None, *, name: str = "", **options: Any) -> Row:
    """A ``GET`` row sent by get.lua; ``route`` is the OpenAPI path when it differs."""
    return Row(
        name=name or f"GET {path}",
        script="get.lua",
        route=("get", route or path.split("?")[0]),
        path=path,
        **options,
    )


def progress(name: str, **options: Any) -> Row:
    """A row of admin's progress writes sent by progress.lua (``POST`` and ``DELETE``
    alternating), with reads between them when ``read_after`` says so."""
    return Row(
        name=name,
        script="progress.lua",
        route=("post", "/team/{team_id}/progress"),
        ids="progress_pairs",
        role="admin",
        expect=(200, 201),
        writes=True,
        **options,
    )


BARE = read("/healthz", name="GET /healthz (bare)")
PROGRESS_WRITE = "POST /team/{id}/progress + DELETE …/{taskId}"
"""The admin's progress write the learners' writes are compared with (``progress_cost``)."""


def learner(name: str, kind: Literal["wrong", "right", "hint"], goal: float | None) -> Row:
    """A learner's write, sent by learners.lua as members of their own teams."""
    hint = kind == "hint"
    return Row(
        name=name,
        script="learners.lua",
        route=("post", "/team/{team_id}/hints" if hint else "/team/{team_id}/attempts"),
        ids="hints" if hint else "attempts",
        role="admin",  # the right answer's withdrawal; the learners send their own tokens
        expect={"wrong": (200,), "right": (201,), "hint": (201,)}[kind],
        writes=True,
        learner=kind,
        progress_goal=goal,
    )


MIX_READ_PATH = "/leaderboard?limit=50"
MIX_READ = f"GET {MIX_READ_PATH}"
"""The read alone that the mix's reads are compared with (a row of its own)."""
MIX = f"mix: 6 x {MIX_READ} per progress write (14 % writes)"
"""Readers on the board while teams complete tasks: one connection's every seventh
request is a write (``POST`` and ``DELETE …/progress`` alternating)."""

FLOOR = read(
    "/leaderboard?limit=50",
    name="ASGI floor: /leaderboard?limit=50's bytes",
)
"""The true floor (harness/floor.py): a plain ASGI callable on the same server and worker
count answering the bytes of ``GET /leaderboard?limit=50``; measured with the same
script and path, against that server."""

HIT_FLOOR = 0.8
"""Issue 30: the read model's hits reach at least this share of the floor."""

ROWS: list[Row] = [
    read("/team?limit=100", slope_goal=True, ratio_goal=0.3, floor_goal=HIT_FLOOR),
    read("/team", name="GET /team (all)", only_at=1_000, ratio_goal=0.1),
    read(
        "/team/{id}/overview",
        "/team/{team_id}/overview",
        ids="teams",
        slope_goal=True,
        ratio_goal=0.5,
    ),
    read("/team/{id}", "/team/{team_id}", ids="teams", slope_goal=True, ratio_goal=0.5),
    read("/leaderboard?limit=50", slope_goal=True, ratio_goal=0.6, floor_goal=HIT_FLOOR),
    read(
        "/leaderboard?limit=1000",
        name="GET /leaderboard (all ranked, 1,000)",
        only_at=1_000,
        ratio_goal=0.3,
    ),
    read(
        "/leaderboard?limit=50",
        name="GET /leaderboard?limit=50, If-None-Match (304)",
        revalidate=True,
        floor_goal=HIT_FLOOR,
    ),
    read("/leaderboard/graph?top=10", slope_goal=True, ratio_goal=0.5, floor_goal=HIT_FLOOR),
    read(
        f"/leaderboard?season={SEASON_ID}&limit=50",
        name="GET /leaderboard?season= (frozen: a member)",
        slope_goal=True,
        ratio_goal=0.6,
        floor_goal=HIT_FLOOR,
    ),
    read(
        f"/leaderboard?season={LIVE_SEASON_ID}&limit=50",
        name="GET /leaderboard?season= (live: a running season)",
        slope_goal=True,
        ratio_goal=0.6,
    ),
    read(
        f"/leaderboard?season={SEASON_ID}&limit=50",
        name="GET /leaderboard?season= (live: an admin)",
        role="admin",
        slope_goal=True,
        ratio_goal=0.6,
        floor_goal=HIT_FLOOR,
    ),
    read(
        f"/leaderboard?tag={BRACKET}&limit=50",
        name="GET /leaderboard?tag= (a bracket)",
        slope_goal=True,
        ratio_goal=0.6,
        floor_goal=HIT_FLOOR,
    ),
    read(
        "/leaderboard?by=perMember&limit=50",
        name="GET /leaderboard?by=perMember",
        slope_goal=True,
        ratio_goal=0.6,
        floor_goal=HIT_FLOOR,
    ),
    read(
        "/discipline/{id}",
        "/discipline/{discipline_id}",
        ids="disciplines",
        slope_goal=True,
        ratio_goal=0.5,
        floor_goal=HIT_FLOOR,
    ),
    progress(PROGRESS_WRITE, ratio_goal=0.2),
    progress("progress write, then GET /leaderboard?limit=50 (cold)", read_after=MIX_READ_PATH),
    progress(MIX, read_after=MIX_READ_PATH, reads_per_write=6, mix_goal=0.5),
    # After the progress write (the ratio's base); wrong before right, whose completions
    # left in flight when a window ends would make later wrong answers 409.
    learner("POST /team/{id}/attempts (wrong)", "wrong", 1.0),
    learner("POST /team/{id}/attempts (right) + DELETE …/progress/{taskId}", "right", 1.2),
    learner("POST /team/{id}/hints (first unlock)", "hint", None),
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

"""``?season={id}``: the query parameter of every read that a season narrows."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends, Query

from questline.web.errors import not_found


async def _season(
    season: Annotated[
        str | None,
        Query(
            max_length=64,
            description="Rank by the points of this season's window (its id); a frozen "
            "season shows members its standings as at `FreezesAt`.",
        ),
    ] = None,
) -> uuid.UUID | None:
    """A malformed season id names no season: 404, like an unknown one."""
    if season is None:
        return None
    try:
        return uuid.UUID(season)
    except ValueError:
        raise not_found("season") from None


SeasonQuery = Annotated[uuid.UUID | None, Depends(_season)]

"""``?season={id}``: the query parameter of every read that a season narrows."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends

from questline.web.paths import optional_id_query

SeasonQuery = Annotated[
    uuid.UUID | None,
    Depends(
        optional_id_query(
            "season",
            "season",
            "Rank by the points of this season's window (its id); a frozen "
            "season shows members its standings as at `FreezesAt`.",
        )
    ),
]

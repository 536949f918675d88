"""The overview's ``?season=`` hook: how a team is ranked in a season, handed in by
the application (the leaderboard's rankings build on this domain)."""

from __future__ import annotations

import uuid
from typing import Protocol, cast

from fastapi.requests import HTTPConnection
from sqlalchemy.ext.asyncio import AsyncSession

from questline.readmodel.service import ReadModel
from questline.web.identity import Caller


class SeasonRank(Protocol):
    """The team's rank in a season as the caller sees it, and the headers of a season's
    body (its own ``ETag``, ``Questline-Frozen-At``, how long it may be kept)."""

    async def __call__(
        self,
        session: AsyncSession,
        *,
        readmodel: ReadModel,
        caller: Caller,
        team_id: uuid.UUID,
        season_id: uuid.UUID,
        version: int,
    ) -> tuple[int | None, dict[str, str]]: ...


def season_rank_of(connection: HTTPConnection) -> SeasonRank:
    """How ``?season=`` ranks a team: the leaderboard's rankings, which build on this
    domain, so the application hands them in (kept on ``app.state.season_rank``)."""
    return cast(SeasonRank, connection.app.state.season_rank)

"""What a leaderboard request asks for, and what its caller may see of it.

The query parameters of ``GET /leaderboard`` and its graph, stream and CSV export
(``discipline``, ``from``, ``to``, ``season``, ``tag``, ``by``, ``frozen``) become a
``selection.Selection``; a season is resolved here (inside the body's build, so that an
answer from the read model reads nothing), with the view the caller gets of it:
members see a frozen season as at its ``FreezesAt``; admins see it live unless they ask
``frozen=true`` (the members' view).
"""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from questline.leaderboard import selection, standings
from questline.leaderboard.selection import Memo, Selection
from questline.readmodel.http import keep_until, version_etag
from questline.readmodel.service import ReadModel
from questline.seasons import service as seasons_service
from questline.storage.db import utcnow
from questline.web.identity import Caller, Role

FROZEN_HEADER = "Questline-Frozen-At"


class RankBy(enum.StrEnum):
    SCORE = "score"
    PER_MEMBER = "perMember"


@dataclass(frozen=True, slots=True)
class Asked:
    """The request's parameters, before the season (if any) is read."""

    selection: Selection
    season_id: uuid.UUID | None = None
    frozen: bool = False
    """``frozen=true``: the members' view (what an admin asks to see)."""


@dataclass(frozen=True, slots=True)
class Chosen:
    """The ranking to serve, and what the response says of it."""

    selection: Selection
    view: seasons_service.View | None = None

    @property
    def headers(self) -> dict[str, str]:
        if self.view is None or self.view.as_of is None:
            return {}
        return {FROZEN_HEADER: rfc3339(self.view.as_of)}

    @property
    def label(self) -> str:
        return "" if self.view is None else self.view.label


def rfc3339(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def sees_live(role: Role, frozen: bool) -> bool:
    """Admins see a frozen season live unless they ask for the members' view."""
    return role is Role.ADMIN and not frozen


async def choose(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    role: Role,
    asked: Asked,
    now: dt.datetime | None = None,
) -> Chosen:
    """The selection with the season's window, discipline and view applied (404 for a
    season of another organization, or a discipline the organization does not see)."""
    if asked.season_id is None:
        if asked.selection.discipline_id is not None:
            await standings.ensure_discipline_visible(
                session, org_id=org_id, discipline_id=asked.selection.discipline_id
            )
        return Chosen(asked.selection)
    season = await seasons_service.get_season(session, org_id=org_id, season_id=asked.season_id)
    view = seasons_service.view_of(season, live=sees_live(role, asked.frozen), now=now or utcnow())
    base = asked.selection
    start = view.start if base.start is None else max(view.start, base.start)
    chosen = replace(
        base,
        start=start,
        before=view.end,
        as_of=view.as_of,
        discipline_id=base.discipline_id or view.discipline_id,
    )
    if chosen.discipline_id is not None:
        await standings.ensure_discipline_visible(
            session, org_id=org_id, discipline_id=chosen.discipline_id
        )
    return Chosen(chosen, view)


def entry_json(entry: standings.Entry) -> dict[str, object]:
    """A ``schemas.LeaderboardEntry`` (or ``PerMemberEntry``) as its JSON object."""
    found: dict[str, object] = {
        "Rank": entry.rank,
        "TeamId": entry.team_id,
        "Name": entry.name,
        "Score": entry.score,
        "TasksCompleted": entry.tasks_completed,
        "ReachedAt": entry.reached_at,
    }
    if entry.member_count is not None:
        found["MemberCount"] = entry.member_count
        found["PointsPerMember"] = entry.points_per_member
    return found


def memo_of(readmodel: ReadModel, org_id: uuid.UUID, version: int) -> Memo:
    """The read model's memo for a ranking built at ``version`` (nothing is kept without
    a version)."""

    async def memo(name: str, build: Callable[[], Awaitable[Any]]) -> Any:
        return await readmodel.memo(org_id, name, version, build)

    return memo


def season_headers(org_id: uuid.UUID, version: int, chosen: Chosen, variant: str) -> dict[str, str]:
    """What a season's body adds: its own ``ETag`` (a live and a frozen body differ at
    one version), ``Questline-Frozen-At`` and how long it may be kept."""
    if chosen.view is None:
        return {}
    return {
        "ETag": version_etag(org_id, version, f"{variant}.{chosen.label}"),
        **chosen.headers,
        **keep_until(chosen.view.changes_at),
    }


async def season_rank(
    session: AsyncSession,
    *,
    readmodel: ReadModel,
    caller: Caller,
    team_id: uuid.UUID,
    season_id: uuid.UUID,
    version: int,
) -> tuple[int | None, dict[str, str]]:
    """The team's rank in the season as the caller sees it (frozen for members during
    the freeze), and the headers of a season's body (``season_headers``). The team
    overview's ``?season=`` (``questline.progress.overview.on_season_rank``)."""
    assert caller.org_id is not None
    org_id = caller.org_id
    chosen = await choose(
        session, org_id=org_id, role=caller.role, asked=Asked(Selection(), season_id=season_id)
    )
    found = await selection.rank_in(
        session,
        org_id=org_id,
        team_id=team_id,
        selection=chosen.selection,
        memo=memo_of(readmodel, org_id, version),
    )
    return found, season_headers(org_id, version, chosen, caller.role.value)

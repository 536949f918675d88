"""What a leaderboard request asks for, and what its caller may see of it.

The query parameters of ``GET /leaderboard`` and its graph, stream and CSV export
(``discipline``, ``from``, ``to``, ``season``, ``tag``, ``by``, ``frozen``) become a
``selection.Selection``; a season is resolved here (inside the body's build, so that an
answer from the read model reads nothing), with the view the caller gets of it:
members see a frozen season as at its ``FreezesAt``; admins see it live unless they ask
``frozen=true`` (the members' view). The same rule holds for a ``from``/``to`` window
without a season: one that meets a season in its freeze is counted, for members, as at
the freeze (``seasons.service.window_view``), so that a window cannot show what the
freeze hides.
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
from questline.readmodel import moved
from questline.readmodel.http import keep_until, version_etag
from questline.readmodel.service import ReadModel
from questline.seasons import service as seasons_service
from questline.storage.db import utcnow
from questline.timeformat import rfc3339
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
    window: seasons_service.WindowView | None = None
    """A window without a season, that meets a season with a freeze (for this reader)."""

    @property
    def shown(self) -> seasons_service.View | seasons_service.WindowView | None:
        """The season's view, or the window's: what the body's headers follow."""
        return self.view if self.view is not None else self.window

    @property
    def headers(self) -> dict[str, str]:
        shown = self.shown
        if shown is None or shown.as_of is None:
            return {}
        return {FROZEN_HEADER: rfc3339(shown.as_of)}

    @property
    def label(self) -> str:
        shown = self.shown
        return "" if shown is None else shown.label

    @property
    def changes_at(self) -> dt.datetime | None:
        """When the body changes by itself (a freeze begins or ends), with no write."""
        shown = self.shown
        return None if shown is None else shown.changes_at


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
        window = await window_freeze(
            session,
            org_id=org_id,
            role=role,
            frozen=asked.frozen,
            start=asked.selection.start,
            end=asked.selection.end,
            now=now,
        )
        if window is None:
            return Chosen(asked.selection)
        return Chosen(replace(asked.selection, as_of=window.as_of), window=window)
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


async def window_freeze(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    role: Role,
    frozen: bool,
    start: dt.datetime | None,
    end: dt.datetime | None,
    now: dt.datetime | None = None,
) -> seasons_service.WindowView | None:
    """The freeze a ``from``/``to`` window (without a season) is under for this reader:
    none without a window, or for an admin who did not ask ``frozen=true``."""
    if start is None and end is None:
        return None
    return await seasons_service.window_view(
        session,
        org_id=org_id,
        start=start,
        end=end,
        live=sees_live(role, frozen),
        now=now or utcnow(),
    )


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
        return await readmodel.memo(org_id, name, version, build, moved.SCORED)

    return memo


def season_headers(org_id: uuid.UUID, version: int, chosen: Chosen, variant: str) -> dict[str, str]:
    """What a season's body (or a window's under a freeze) adds: its own ``ETag`` (a
    live and a frozen body differ at one version), ``Questline-Frozen-At`` and how long
    it may be kept."""
    if chosen.shown is None:
        return {}
    return {
        "ETag": version_etag(org_id, version, f"{variant}.{chosen.label}"),
        **chosen.headers,
        **keep_until(chosen.changes_at),
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
    overview's ``?season=`` (``questline.progress.season_rank.season_rank_of``)."""
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

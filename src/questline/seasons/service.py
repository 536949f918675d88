"""Season rules: the window and freeze checks, what a reader sees of a season now, the
reveal. Every change bumps the organization's read-model version in its transaction:
the season's standings are served from the read model, on every process."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit
from questline.disciplines.models import Discipline
from questline.disciplines.service import visible_to
from questline.readmodel.versions import bump
from questline.seasons import schemas
from questline.seasons.models import Season
from questline.storage.db import utcnow
from questline.web.errors import Conflict, FieldError, Unprocessable
from questline.web.lookups import one_or_not_found
from questline.web.schemas import shown_row


def phase_of(season: Season, now: dt.datetime) -> schemas.Phase:
    if season.revealed_at is not None or now >= season.ends_at:
        return schemas.Phase.ENDED
    if now < season.starts_at:
        return schemas.Phase.UPCOMING
    if season.freezes_at is not None and now >= season.freezes_at:
        return schemas.Phase.FROZEN
    return schemas.Phase.RUNNING


@dataclass(frozen=True, slots=True)
class View:
    """What one reader sees of a season at one instant: the season's completions with
    ``CompletedAt`` in ``[start, end)``, counting only what was recorded before
    ``as_of`` when the view is frozen."""

    season_id: uuid.UUID
    start: dt.datetime
    end: dt.datetime
    discipline_id: uuid.UUID | None
    as_of: dt.datetime | None
    """The freeze instant (frozen view), else ``None`` (live view)."""
    changes_at: dt.datetime | None
    """The next instant at which this view may change by itself (a phase boundary),
    with no write at all: a kept body must not outlive it."""

    @property
    def label(self) -> str:
        """Part of the body's ``ETag``: a frozen and a live body differ at one version."""
        return "frozen" if self.as_of is not None else "live"


def view_of(season: Season, *, live: bool, now: dt.datetime) -> View:
    """The season as a reader sees it now: frozen during the freeze unless ``live``
    (admins see the live standings unless they ask for the frozen ones)."""
    frozen = phase_of(season, now) is schemas.Phase.FROZEN and not live
    boundaries = [season.starts_at, season.freezes_at, season.ends_at]
    upcoming = [b for b in boundaries if b is not None and b > now]
    return View(
        season_id=season.id,
        start=season.starts_at,
        end=season.ends_at,
        discipline_id=season.discipline_id,
        as_of=season.freezes_at if frozen else None,
        changes_at=min(upcoming) if upcoming and season.revealed_at is None else None,
    )


@dataclass(frozen=True, slots=True)
class WindowView:
    """What a member sees of a ``from``/``to`` window that overlaps seasons with a
    freeze: the same rule as the season's own view, so that a window cannot show what
    the freeze hides."""

    as_of: dt.datetime | None
    """The earliest ``FreezesAt`` of the seasons in their freeze that the window
    overlaps (count only what was recorded before it), else ``None`` (live)."""
    changes_at: dt.datetime | None
    """The next freeze or end of those seasons: a kept body must not outlive it."""

    @property
    def label(self) -> str:
        return "frozen" if self.as_of is not None else "live"


def overlaps(season: Season, start: dt.datetime | None, end: dt.datetime | None) -> bool:
    """Whether the inclusive window ``[start, end]`` meets ``[StartsAt, EndsAt)``."""
    return (end is None or end >= season.starts_at) and (start is None or start < season.ends_at)


async def window_view(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    start: dt.datetime | None,
    end: dt.datetime | None,
    live: bool,
    now: dt.datetime,
) -> WindowView | None:
    """The freeze a windowed ranking is under for its reader, or ``None`` when none
    applies now or later (the reader sees live, or no season with a freeze still to
    come or in force meets the window). The whole window is counted as at the
    earliest freeze it meets: one ranking, one instant, as the season's own view."""
    if live:
        return None
    found = [
        season
        for season in await session.scalars(
            select(Season).where(
                Season.organization_id == org_id,
                Season.freezes_at.is_not(None),
                Season.revealed_at.is_(None),
                Season.ends_at > now,
            )
        )
        if overlaps(season, start, end)
    ]
    if not found:
        return None
    frozen = [s.freezes_at for s in found if s.freezes_at is not None and s.freezes_at <= now]
    upcoming = [
        s.freezes_at if s.freezes_at is not None and s.freezes_at > now else s.ends_at
        for s in found
    ]
    return WindowView(as_of=min(frozen) if frozen else None, changes_at=min(upcoming))


def to_schema(season: Season, now: dt.datetime | None = None) -> schemas.Season:
    return shown_row(schemas.Season, season, phase=phase_of(season, now or utcnow()))


def check_times(
    starts_at: dt.datetime, ends_at: dt.datetime, freezes_at: dt.datetime | None
) -> None:
    """``StartsAt < EndsAt`` and, with a freeze, ``StartsAt < FreezesAt ≤ EndsAt``."""
    errors = []
    if not starts_at < ends_at:
        errors.append(FieldError(field="EndsAt", message="Must be after StartsAt."))
    if freezes_at is not None and not starts_at < freezes_at <= ends_at:
        errors.append(
            FieldError(field="FreezesAt", message="Must be after StartsAt and not after EndsAt.")
        )
    if errors:
        raise Unprocessable("The season's times are out of order.", errors=errors)


async def check_discipline(
    session: AsyncSession, *, org_id: uuid.UUID, discipline_id: uuid.UUID | None
) -> None:
    if discipline_id is None:
        return
    found = await session.scalar(
        select(Discipline.id).where(Discipline.id == discipline_id, visible_to(org_id))
    )
    if found is None:
        raise Unprocessable(
            "No such discipline in this organization.",
            errors=[FieldError(field="DisciplineId", message="Name a discipline you can see.")],
        )


async def create_season(
    session: AsyncSession, *, org_id: uuid.UUID, data: schemas.SeasonCreate
) -> Season:
    check_times(data.starts_at, data.ends_at, data.freezes_at)
    await check_discipline(session, org_id=org_id, discipline_id=data.discipline_id)
    now = utcnow()
    # SeasonCreate names its fields as the row does: the body is the one list of what an
    # admin sets on a new season (a field added to both needs no third copy here).
    season = Season(organization_id=org_id, **data.model_dump(), created_at=now, updated_at=now)
    session.add(season)
    await session.flush()
    await bump(session, org_id)
    await audit.record_on(session, "season", season, "season.created", after=_fields(season))
    return season


async def list_seasons(session: AsyncSession, *, org_id: uuid.UUID) -> Sequence[Season]:
    """The organization's seasons, the latest start first."""
    rows = await session.scalars(
        select(Season)
        .where(Season.organization_id == org_id)
        .order_by(Season.starts_at.desc(), Season.id)
    )
    return rows.all()


async def get_season(
    session: AsyncSession, *, org_id: uuid.UUID, season_id: uuid.UUID, for_update: bool = False
) -> Season:
    query = select(Season).where(Season.organization_id == org_id, Season.id == season_id)
    return await one_or_not_found(session, query, kind="season", for_update=for_update)


async def update_season(
    session: AsyncSession, *, season: Season, data: schemas.SeasonUpdate
) -> Season:
    given = data.model_fields_set
    for name in ("name", "starts_at", "ends_at"):
        if name in given and getattr(data, name) is None:
            raise Unprocessable(
                f"{schemas.SeasonUpdate.model_fields[name].alias} cannot be null.",
                errors=[
                    FieldError(
                        field=str(schemas.SeasonUpdate.model_fields[name].alias),
                        message="Give a value or leave it out.",
                    )
                ],
            )
    starts_at = data.starts_at if data.starts_at is not None else season.starts_at
    ends_at = data.ends_at if data.ends_at is not None else season.ends_at
    freezes_at = data.freezes_at if "freezes_at" in given else season.freezes_at
    check_times(starts_at, ends_at, freezes_at)
    before = _fields(season)
    if "discipline_id" in given:
        await check_discipline(
            session, org_id=season.organization_id, discipline_id=data.discipline_id
        )
        season.discipline_id = data.discipline_id
    if data.name is not None:
        season.name = data.name
    season.starts_at, season.ends_at, season.freezes_at = starts_at, ends_at, freezes_at
    season.updated_at = utcnow()
    await session.flush()
    await bump(session, season.organization_id)
    await audit.record_on(
        session, "season", season, "season.changed", before=before, after=_fields(season)
    )
    return season


async def delete_season(session: AsyncSession, *, season: Season) -> None:
    before = _fields(season)
    await session.delete(season)
    await session.flush()
    await bump(session, season.organization_id)
    await audit.record_on(session, "season", season, "season.deleted", before=before)


async def reveal(session: AsyncSession, *, season: Season) -> Season:
    """End the freeze now: everyone sees the live (then final) standings. The version
    bump makes every process rebuild what it kept of the frozen view."""
    now = utcnow()
    if phase_of(season, now) is not schemas.Phase.FROZEN:
        raise Conflict("The season is not frozen: there is nothing to reveal.")
    season.revealed_at = now
    season.updated_at = now
    await session.flush()
    await bump(session, season.organization_id)
    await audit.record_on(
        session, "season", season, "season.revealed", after={"RevealedAt": now.isoformat()}
    )
    return season


def _fields(season: Season) -> dict[str, str | None]:
    """What an audit entry shows of a season."""

    def iso(at: dt.datetime | None) -> str | None:
        return None if at is None else at.isoformat()

    return {
        "Name": season.name,
        "StartsAt": iso(season.starts_at),
        "EndsAt": iso(season.ends_at),
        "FreezesAt": iso(season.freezes_at),
        "DisciplineId": None if season.discipline_id is None else str(season.discipline_id),
    }

"""The demo organization: enough data that a newcomer's first look is alive.

A dozen teams (one of them the admin team), a full discipline of each color, and a
week of completions spread over time, all written through the services, so that the
first leaderboard and the first graph already tell a story.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.config import Settings
from questline.demo import content as demo_content
from questline.disciplines import schemas as discipline_schemas
from questline.disciplines import service as disciplines_service
from questline.organizations.service import ensure_organization
from questline.progress import schemas as progress_schemas
from questline.progress import service as progress_service
from questline.storage import tenancy
from questline.storage.db import Database, utcnow
from questline.teams import schemas as team_schemas
from questline.teams import service as teams_service
from questline.teams.models import Team
from questline.web.identity import Caller, Role

DEMO_ORG_ID = uuid.UUID("0b6f3c1e-5d2a-4e8f-9a7b-2c4d6e8f0a1b")

TEAM_NAMES = [
    "Aurora", "Basilisk", "Comet", "Dynamo", "Ember", "Falcon",
    "Glacier", "Harbor", "Ion", "Juniper", "Kestrel", "Management",
]  # fmt: skip
ADMIN_TEAM = "Management"
COLORS = ["Purple", "Green", "Red"]
WEEK = dt.timedelta(days=7)
SEED = 20261122
"""Fixed, so that every demo tells the same story."""


async def load_demo(db: Database, settings: Settings) -> bool:
    """Load the demo organization unless it has teams already. True when loaded."""
    with tenancy.acting_for(DEMO_ORG_ID):  # row-level security: the demo's organization
        return await _load(db, settings)


async def _load(db: Database, settings: Settings) -> bool:
    async with db.session() as session:
        await ensure_organization(session, DEMO_ORG_ID)
        existing = await session.scalar(
            select(func.count()).select_from(Team).where(Team.organization_id == DEMO_ORG_ID)
        )
        if existing:
            return False
        now = utcnow()
        teams = await _load_teams(session, created_at=now - WEEK - dt.timedelta(days=1))
        disciplines = await _load_disciplines(session, settings)
        await _load_progress(session, teams=teams, disciplines=disciplines, now=now)
    return True


async def _load_teams(session: AsyncSession, *, created_at: dt.datetime) -> list[Team]:
    teams = []
    for index, name in enumerate(TEAM_NAMES):
        created = await teams_service.create_team(
            session,
            org_id=DEMO_ORG_ID,
            data=team_schemas.TeamCreate(name=name, tags=["demo"]),
        )
        team = created.team
        team.created_at = created_at  # the demo's teams started a day before the week
        team.score_reached_at = created_at
        for n in range(3):
            slug = f"{name.lower()}.{n + 1}"
            await teams_service.add_member(
                session,
                team=team,
                email=f"{slug}@demo.questline.dev",
                given_name=f"{name} {n + 1}",
            )
        if name == ADMIN_TEAM:
            await teams_service.set_admin_flag(session, team=team, value=True)
        elif index % 3 == 0:
            await teams_service.set_survey_flag(session, team=team, value=True)
        teams.append(team)
    await session.flush()
    return teams


async def _load_disciplines(session: AsyncSession, settings: Settings) -> list[list[uuid.UUID]]:
    """The three disciplines; for each, its task ids in reading order."""
    caller = Caller(subject="demo", role=Role.ADMIN, org_id=DEMO_ORG_ID)
    found = []
    for color in COLORS:
        data = discipline_schemas.DisciplineCreate.model_validate(demo_content.document(color))
        written = await disciplines_service.create_discipline(
            session, caller=caller, data=data, settings=settings
        )
        found.append(
            [
                task.id
                for level in written.document.levels
                for quest in level.quests
                for task in quest.tasks
            ]
        )
    return found


def _plan(
    rng: random.Random, disciplines: list[list[uuid.UUID]], *, pace: float
) -> list[uuid.UUID]:
    """The tasks one team completes, in the order it completes them: a prefix of each
    discipline (teams work through levels in order), interleaved."""
    queues = []
    for tasks in disciplines:
        share = min(1.0, pace * rng.uniform(0.4, 1.3))
        queues.append(list(tasks[: int(len(tasks) * share)]))
    order: list[uuid.UUID] = []
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        order.append(queue.pop(0))
    return order


async def _load_progress(
    session: AsyncSession,
    *,
    teams: list[Team],
    disciplines: list[list[uuid.UUID]],
    now: dt.datetime,
) -> None:
    """A week of completions at spread-out times, applied in time order."""
    rng = random.Random(SEED)
    start = now - WEEK
    events: list[tuple[dt.datetime, Team, uuid.UUID]] = []
    for team in teams:
        pace = 0.25 if team.is_admin_team else rng.uniform(0.3, 0.95)
        tasks = _plan(rng, disciplines, pace=pace)
        seconds = sorted(
            rng.uniform(0, (WEEK - dt.timedelta(hours=1)).total_seconds()) for _ in tasks
        )
        for task_id, offset in zip(tasks, seconds, strict=True):
            at = (start + dt.timedelta(seconds=offset)).replace(microsecond=0)
            events.append((at, team, task_id))
    events.sort(key=lambda e: (e[0], e[1].name))
    for at, team, task_id in events:
        data = progress_schemas.ProgressCreate.model_validate(
            {"TaskId": task_id, "CompletedAt": at}
        )
        await progress_service.complete_task(session, team=team, data=data)

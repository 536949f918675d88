"""The demo organization: enough data that a newcomer's first look is alive."""

from __future__ import annotations

import uuid

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.db import Database
from questline.organizations.service import ensure_organization
from questline.teams import schemas as team_schemas
from questline.teams import service as teams_service
from questline.teams.models import Team

DEMO_ORG_ID = uuid.UUID("0b6f3c1e-5d2a-4e8f-9a7b-2c4d6e8f0a1b")

TEAM_NAMES = [
    "Aurora", "Basilisk", "Comet", "Dynamo", "Ember", "Falcon",
    "Glacier", "Harbor", "Ion", "Juniper", "Kestrel", "Management",
]  # fmt: skip
ADMIN_TEAM = "Management"


async def load_demo(db: Database) -> bool:
    """Load the demo organization unless it has teams already. True when loaded."""
    async with db.session() as session:
        await ensure_organization(session, DEMO_ORG_ID)
        existing = await session.scalar(
            select(func.count()).select_from(Team).where(Team.organization_id == DEMO_ORG_ID)
        )
        if existing:
            return False
        await _load_teams(session)
    return True


async def _load_teams(session: AsyncSession) -> None:
    for index, name in enumerate(TEAM_NAMES):
        created = await teams_service.create_team(
            session,
            org_id=DEMO_ORG_ID,
            data=team_schemas.TeamCreate(name=name, tags=["demo"]),
        )
        for n in range(3):
            slug = f"{name.lower()}.{n + 1}"
            await teams_service.add_member(
                session,
                team=created.team,
                email=f"{slug}@demo.questline.dev",
                given_name=f"{name} {n + 1}",
            )
        if name == ADMIN_TEAM:
            await teams_service.set_admin_flag(session, team=created.team, value=True)
        elif index % 3 == 0:
            await teams_service.set_survey_flag(session, team=created.team, value=True)

"""SCIM tests: an organization of its own per test and the directory that provisions it
with a stored SCIM token."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import pytest

from questline.auth import scim_tokens
from questline.config import Settings
from questline.storage import tenancy
from questline.storage.db import Database
from tests.factories import Org, World
from tests.scim.support import SCIM, Directory

__all__ = ["SCIM", "Directory", "directory_for", "issue_token", "issue_token_sync"]


async def issue_token(
    db: Database,
    org_id: uuid.UUID,
    *,
    label: str = "directory",
    lifetime: dt.timedelta = dt.timedelta(days=30),
) -> scim_tokens.Issued:
    with tenancy.acting_for(org_id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with db.session(write=True) as session:
            return await scim_tokens.issue(session, org_id=org_id, label=label, lifetime=lifetime)


def issue_token_sync(settings: Settings, org_id: uuid.UUID) -> str:
    """A stored SCIM token, for a test that runs outside the event loop."""

    async def issue() -> str:
        db = Database(settings)
        try:
            return (await issue_token(db, org_id)).token
        finally:
            await db.dispose()

    return asyncio.run(issue())


async def directory_for(org: Org, world: World) -> Directory:
    token = (await issue_token(world.db, org.id)).token
    return Directory(client=org.client, org_id=org.id, token=token)


@pytest.fixture
def org(world: World) -> Org:
    return world.org()


@pytest.fixture
async def directory(org: Org, world: World) -> Directory:
    """The directory of ``org``."""
    return await directory_for(org, world)

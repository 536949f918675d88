"""SCIM tests: an organization of its own per test and the directory that provisions it
with its scim token."""

from __future__ import annotations

import pytest

from questline.auth.tokens import TokenService
from questline.web.identity import Role
from tests.factories import Org, World
from tests.scim.support import SCIM, Directory

__all__ = ["SCIM", "Directory", "directory_for"]


def directory_for(org: Org, tokens: TokenService) -> Directory:
    token = tokens.mint(role=Role.SCIM, org_id=org.id, subject="directory")
    return Directory(client=org.client, org_id=org.id, token=token)


@pytest.fixture
def org(world: World) -> Org:
    return world.org()


@pytest.fixture
def directory(org: Org, world: World) -> Directory:
    """The directory of ``org``."""
    return directory_for(org, world.tokens)

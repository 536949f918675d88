"""The tenant rule's one marker: the look-ups that turn something from outside (a
launch, a callback, a SCIM token, a sign-in code, an invitation, a session cookie) into
an organization.

Everywhere else a statement on a tenant table names its organization. The few functions
that may read several organizations' rows to find the one are marked
``@finds_the_organization``: a row by the digest of a secret the caller holds (a session
cookie, a SCIM token), or the registrations a launch may belong to, from which
``lti.flow.registration_for`` decides at most one and lets only the one whose keys
verified the launch act. Housekeeping that deletes every organization's expired rows and
reads nothing out is marked ``@sweeps_every_organization``.
``tests/security/test_tenant_rule.py`` reads the source of every way in and fails on a
statement that is none of these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

MARKER = "finds_the_organization"
SWEEP_MARKER = "sweeps_every_organization"

F = TypeVar("F", bound=Callable[..., object])


def finds_the_organization(function: F) -> F:
    """Mark a pre-authentication look-up (the source is the record; nothing changes at
    run time)."""
    return function


def sweeps_every_organization(function: F) -> F:
    """Mark housekeeping over every organization's rows (expired logins, codes,
    sessions): it deletes by time and returns nothing read."""
    return function

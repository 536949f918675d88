"""The tenant rule: its markers, and on PostgreSQL its enforcement by row-level security.

The markers name the look-ups that turn something from outside (a launch, a callback, a
SCIM token, a sign-in code, an invitation, a session cookie) into an organization.
Everywhere else a statement on a tenant table names its organization. The few functions
that may read several organizations' rows to find the one are marked
``@finds_the_organization``: a row by the digest of a secret the caller holds (a session
cookie, a SCIM token), or the registrations a launch may belong to, from which
``lti.flow.registration_for`` decides at most one and lets only the one whose keys
verified the launch act. Housekeeping that deletes every organization's expired rows and
reads nothing out is marked ``@sweeps_every_organization``. What an operator's change
of a global discipline does to every organization's progress in it (the count of the
teams that completed its tasks, and their withdrawal) is marked
``@across_a_global_discipline``: only a transaction that acts for no organization, on a
discipline that belongs to none, takes the role there.
``tests/security/test_tenant_rule.py`` reads the source of every way in and fails on a
statement that is none of these.

With row-level security (``QUESTLINE_DATABASE_ROW_SECURITY``, PostgreSQL) the database
holds the rule too: every tenant table has a policy that shows and accepts only the rows
of the organization the transaction set (``questline.org_id``, ``SET LOCAL``: it ends
with the transaction, so a transaction pooler hands no organization on). The request
path sets it once, from the authenticated caller (``acting_for``, in the request
boundary); a transaction that set none sees no tenant rows. The marked functions are the
one narrow path across organizations for the request path: they run their statements
as the every-organization role (``SET LOCAL ROLE``, BYPASSRLS) and leave it when they
return; background work that serves every organization by design (the dispatchers, the
outbox's fan-out, the purges) takes that role for its transactions
(``@serves_every_organization``, ``for_every_organization``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar, cast

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

MARKER = "finds_the_organization"
SWEEP_MARKER = "sweeps_every_organization"
GLOBAL_DISCIPLINE_MARKER = "across_a_global_discipline"

ORG_SETTING = "questline.org_id"
"""The setting the policies compare ``organization_id`` with."""
ACTING = f"NULLIF(current_setting('{ORG_SETTING}', true), '')::uuid"
"""The organization the transaction acts for; NULL when it acts for none."""
POLICY_NAME = "questline_tenant"
EVERY_ORGANIZATION_ROLE = "questline_every_organization_role"
"""``session.info`` key: the quoted name of the every-organization role, present only
when row-level security is on."""

_ACROSS = "questline_across_organizations"
"""``session.info`` key: a marked function runs now (one inside another keeps its role)."""

SET_ORGANIZATION = text(f"SELECT set_config('{ORG_SETTING}', :org, true)")
SESSION_ORGANIZATION = "questline_session_organization"
"""``PoolProxiedConnection.info`` key: the organization a direct connection's
session-level setting names (``Database.driver_acting_for``)."""

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

acting_organization: ContextVar[uuid.UUID | None] = ContextVar(
    "questline_acting_organization", default=None
)
"""The organization this task acts for: each transaction it begins sets it first."""


@contextmanager
def acting_for(organization_id: uuid.UUID | None) -> Iterator[None]:
    """Transactions begun inside act for ``organization_id`` (None: for none)."""
    token = acting_organization.set(organization_id)
    try:
        yield
    finally:
        acting_organization.reset(token)


serving_every_organization: ContextVar[bool] = ContextVar(
    "questline_serving_every_organization", default=False
)
"""This task serves every organization by design (``for_every_organization``)."""


@contextmanager
def for_every_organization() -> Iterator[None]:
    """Transactions begun inside run as the every-organization role: the background
    work that serves every organization by design (the outbox's fan-out and the
    dispatchers' passes, marked ``@serves_every_organization``; the periodic purges).
    Each statement there names the organizations it touches; the request path never
    enters this."""
    token = serving_every_organization.set(True)
    try:
        yield
    finally:
        serving_every_organization.reset(token)


def serves_every_organization(function: F) -> F:
    """Mark background work that serves every organization by design (a dispatcher's
    pass, the outbox's fan-out): with row-level security its transactions run as the
    every-organization role (``for_every_organization``)."""

    @functools.wraps(function)
    async def serving(*args: Any, **kwargs: Any) -> Any:
        with for_every_organization():
            return await function(*args, **kwargs)

    return cast(F, serving)


def transaction_start(role: str) -> str:
    """What a transaction begins with under row-level security, sent with its ``BEGIN``
    in one round trip: the organization the task acts for, or none (an empty setting,
    which also hides any session-level one a driver path left on the connection), or,
    serving every organization, that role."""
    if serving_every_organization.get():
        return f"SET LOCAL ROLE {role};"
    organization_id = acting_organization.get()
    org = "" if organization_id is None else str(uuid.UUID(str(organization_id)))
    return f"SELECT set_config('{ORG_SETTING}', '{org}', true);"


class ActingConnection(asyncpg.Connection):
    """An asyncpg connection whose every transaction starts acting for the task's
    organization (``transaction_start``): the setting rides on ``BEGIN``, so row-level
    security costs no round trip of its own. The driver starts a transaction by
    executing ``BEGIN …`` without arguments; a test pins that, since a driver that began
    otherwise would leave transactions acting for none (they would see no rows)."""

    every_organization_role = ""

    async def execute(self, query: str, *args: Any, **options: Any) -> str:
        if not args and query.startswith("BEGIN"):
            start = transaction_start(self.every_organization_role)
            query = f"{query.rstrip().rstrip(';')}; {start}"
        result: str = await super().execute(query, *args, **options)
        return result


def acting_connection_class(role: str) -> type[ActingConnection]:
    """The connection class for a database under row-level security; ``role`` is the
    quoted name of its every-organization role."""
    return type("QuestlineActingConnection", (ActingConnection,), {"every_organization_role": role})


def row_security_on(session: AsyncSession) -> bool:
    return EVERY_ORGANIZATION_ROLE in session.info


async def act_for(session: AsyncSession, organization_id: uuid.UUID) -> None:
    """The rest of this transaction acts for ``organization_id`` (after a marked look-up
    found it)."""
    if row_security_on(session):
        await session.execute(SET_ORGANIZATION, {"org": str(organization_id)})


def _across_organizations(function: F) -> F:
    @functools.wraps(function)
    async def across(session: AsyncSession, *args: Any, **kwargs: Any) -> Any:
        role = session.info.get(EVERY_ORGANIZATION_ROLE)
        if role is None or session.info.get(_ACROSS) or serving_every_organization.get():
            # No row security, or inside another marked function (which leaves the
            # role when it returns) or work that has the role throughout.
            return await function(session, *args, **kwargs)
        await session.execute(text(f"SET LOCAL ROLE {role}"))
        session.info[_ACROSS] = True
        try:
            result = await function(session, *args, **kwargs)
        except DBAPIError:
            session.info.pop(_ACROSS, None)
            raise  # the transaction failed: it rolls back, and the role with it
        except BaseException:
            session.info.pop(_ACROSS, None)
            await session.execute(text("SET LOCAL ROLE NONE"))
            raise
        session.info.pop(_ACROSS, None)
        await session.execute(text("SET LOCAL ROLE NONE"))
        return result

    return cast(F, across)


def finds_the_organization(function: F) -> F:
    """Mark a pre-authentication look-up; with row-level security its statements run as
    the every-organization role."""
    return _across_organizations(function)


def sweeps_every_organization(function: F) -> F:
    """Mark housekeeping over every organization's rows (expired logins, codes,
    sessions): it deletes by time and returns nothing read. With row-level security its
    statements run as the every-organization role."""
    return _across_organizations(function)


_OPERATOR_ON_GLOBAL_DISCIPLINE = text(
    f"SELECT d.organization_id IS NULL AND {ACTING} IS NULL "
    "FROM disciplines d WHERE d.id = :discipline"
)
"""True when the discipline belongs to no organization and this transaction acts for
none (an operator's: the only one that may write a global discipline)."""


def across_a_global_discipline(function: F) -> F:
    """Mark what an operator's change of a global discipline does in every organization
    whose teams use it (``progress.hooks.before_tasks_removed``: the teams that completed
    tasks the change removes, and the withdrawal of that progress). It takes
    ``discipline_id`` by keyword. With row-level security its statements run as the
    every-organization role only when the database says the discipline is global and
    the transaction acts for no organization; otherwise (an organization's admin, its own
    discipline) they run under the caller's policies, which show only its rows."""
    across = _across_organizations(function)

    @functools.wraps(function)
    async def operator_or_caller(
        session: AsyncSession, *args: Any, discipline_id: uuid.UUID, **kwargs: Any
    ) -> Any:
        if row_security_on(session) and await session.scalar(
            _OPERATOR_ON_GLOBAL_DISCIPLINE, {"discipline": discipline_id}
        ):
            return await across(session, *args, discipline_id=discipline_id, **kwargs)
        return await function(session, *args, discipline_id=discipline_id, **kwargs)

    return cast(F, operator_or_caller)


SHARED_TABLES = ("readmodel_versions",)
"""Tables with an ``organization_id`` that carry no policy: the read model's version
counters (a number per organization, nothing of its data), which every process reads
for every organization on its own connections to keep its cache fresh."""

TENANT_TABLES = text(
    """
    SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables t
      ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = current_schema() AND c.column_name = 'organization_id'
      AND t.table_type = 'BASE TABLE' AND c.table_name <> ALL(:shared)
    ORDER BY c.table_name
    """
).bindparams(shared=list(SHARED_TABLES))
_UNPROTECTED = """
    SELECT c.relname, a.attnotnull FROM pg_class c
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'organization_id'
      AND NOT a.attisdropped
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
      AND c.relname <> ALL(:shared)
      AND NOT (c.relrowsecurity AND EXISTS (
        SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = :policy))
"""
UNPROTECTED_TABLES = text(_UNPROTECTED + " ORDER BY c.relname").bindparams(
    policy=POLICY_NAME, shared=list(SHARED_TABLES)
)
"""The tables that have an ``organization_id`` and lack the enabled tenant policy."""

POLICY_CONDITION = f"organization_id = {ACTING}"
"""A transaction that set no organization (NULL, or '' once a session has used the
setting) sees and writes no row. ``current_setting`` is stable: the comparison uses the
tables' indexes on ``organization_id``."""
SHARED_ROWS_CONDITION = f"organization_id IS NULL OR organization_id = {ACTING}"
"""Where ``organization_id`` may be NULL (the global disciplines every organization
sees, a learning platform's login not yet bound to one): every transaction sees the
shared rows, and its organization's."""
SHARED_ROWS_CHECK = f"organization_id IS NOT DISTINCT FROM {ACTING}"
"""...but writes only its own: an organization's rows, or (setting none, an operator)
the shared ones."""


DELETE_POLICY = "questline_tenant_delete"
"""Where some rows are every organization's to read (``organization_id`` NULL, or a node
below a global discipline), the tenant policy shows them (``USING``) and accepts only
the transaction's own (``WITH CHECK``): an ``UPDATE`` of a shared row is refused by the
check, but a ``DELETE`` has no new row to check and would go through. This second,
restrictive policy for ``DELETE`` only lets a transaction delete only the rows it may
write. It is not a restriction on ``UPDATE``: PostgreSQL applies the ``UPDATE``
policies to locking reads too, and the progress write locks a global discipline's rows
(``FOR KEY SHARE``) while its organization completes a task of it."""


def set_policies(
    connection: Connection, name: str, *, using: str, check: str, delete: str | None
) -> None:
    """Row-level security on table ``name``: the tenant policy (``using``: the rows a
    transaction sees; ``check``: the rows it may leave behind) and, if ``delete``, the
    restrictive policy on the rows it may delete."""
    table = connection.dialect.identifier_preparer.quote(name)
    connection.execute(text(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY"))
    for policy in (POLICY_NAME, DELETE_POLICY):
        connection.execute(text(f"DROP POLICY IF EXISTS {policy} ON {table}"))
    connection.execute(
        text(f"CREATE POLICY {POLICY_NAME} ON {table} USING ({using}) WITH CHECK ({check})")
    )
    if delete is not None:
        connection.execute(
            text(
                f"CREATE POLICY {DELETE_POLICY} ON {table} AS RESTRICTIVE FOR DELETE "
                f"USING ({delete})"
            )
        )


def drop_policies(connection: Connection, name: str) -> None:
    """No row-level security on table ``name`` any more."""
    table = connection.dialect.identifier_preparer.quote(name)
    for policy in (POLICY_NAME, DELETE_POLICY):
        connection.execute(text(f"DROP POLICY IF EXISTS {policy} ON {table}"))
    connection.execute(text(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY"))


def protect_tenant_tables(connection: Connection) -> list[str]:
    """Give every table with an ``organization_id`` column (PostgreSQL, the current
    schema) row-level security and the tenant policy, if it lacks them; the tables it
    changed. Run by the ``rls_0001`` migration and after every later upgrade
    (``migrations/env.py``), so a tenant table a later migration adds is covered too."""
    found = [(str(row[0]), bool(row[1])) for row in connection.execute(UNPROTECTED_TABLES)]
    for name, required in found:
        if required:
            condition = POLICY_CONDITION
            set_policies(connection, name, using=condition, check=condition, delete=None)
        else:
            set_policies(
                connection,
                name,
                using=SHARED_ROWS_CONDITION,
                check=SHARED_ROWS_CHECK,
                delete=SHARED_ROWS_CHECK,
            )
    return [name for name, _ in found]


SHARED_ROWS_TABLES = text(
    """
    SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables t
      ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = current_schema() AND c.column_name = 'organization_id'
      AND c.is_nullable = 'YES' AND t.table_type = 'BASE TABLE'
      AND c.table_name <> ALL(:shared)
    ORDER BY c.table_name
    """
).bindparams(shared=list(SHARED_TABLES))
"""The tenant tables whose ``organization_id`` may be NULL (shared rows)."""


def protect_shared_rows_from_delete(connection: Connection) -> None:
    """The tables with shared rows get the restrictive ``DELETE`` policy (the
    ``rls_0003`` migration)."""
    for row in connection.execute(SHARED_ROWS_TABLES):
        table = connection.dialect.identifier_preparer.quote(str(row[0]))
        connection.execute(text(f"DROP POLICY IF EXISTS {DELETE_POLICY} ON {table}"))
        connection.execute(
            text(
                f"CREATE POLICY {DELETE_POLICY} ON {table} AS RESTRICTIVE FOR DELETE "
                f"USING ({SHARED_ROWS_CHECK})"
            )
        )


def unprotect_shared_rows_from_delete(connection: Connection) -> None:
    """Undo ``protect_shared_rows_from_delete`` (the ``rls_0003`` downgrade)."""
    for row in connection.execute(SHARED_ROWS_TABLES):
        table = connection.dialect.identifier_preparer.quote(str(row[0]))
        connection.execute(text(f"DROP POLICY IF EXISTS {DELETE_POLICY} ON {table}"))


PLATFORM = uuid.UUID(int=0)
"""The ``organization_id`` of the platform's own rows: the events and audit entries of
global disciplines, an operator's idempotency keys (``events.models.PLATFORM_ORG``,
``audit.models.PLATFORM_ORG``, ``web.idempotency.PLATFORM_SCOPE``)."""
PLATFORM_TABLES = ("audit_entries", "events", "idempotency_keys")
"""The tenant tables that hold platform rows too."""
PLATFORM_ROWS_CONDITION = f"organization_id = COALESCE({ACTING}, '{PLATFORM}'::uuid)"
"""In those tables a transaction that acts for no organization (an operator, who acts
on the global disciplines) reads and writes the platform's rows, and only those; an
organization's transaction still only its own. The request boundary sets no
organization for an operator because the global disciplines are written only by a
transaction that sets none (``SHARED_ROWS_CHECK``): the platform's rows of the same
transaction must be accepted under the same setting."""


def protect_platform_rows(connection: Connection) -> None:
    """Give the tables with platform rows the policy that lets a transaction acting for
    no organization write them (the ``rls_0002`` migration)."""
    for name in PLATFORM_TABLES:
        condition = PLATFORM_ROWS_CONDITION
        set_policies(connection, name, using=condition, check=condition, delete=None)


def unprotect_platform_rows(connection: Connection) -> None:
    """Back to the plain tenant policy (the ``rls_0002`` downgrade)."""
    for name in PLATFORM_TABLES:
        condition = POLICY_CONDITION
        set_policies(connection, name, using=condition, check=condition, delete=None)


DISCIPLINE_CHILD_TABLES = ("levels", "quests", "tasks", "resources")
"""The discipline tree below ``disciplines``: no ``organization_id`` of their own, each
row carries its ``discipline_id`` (a tree loads in one query a table). Their policy
follows that column to the discipline, whose organization decides."""

NON_TENANT_TABLES = ("alembic_version", "health_probe", "lti_tool_keys", "organizations")
"""Tables with neither an ``organization_id`` nor a parent that has one: the migrations'
bookkeeping, the health check's probe, the tool's own signing keys (one set for every
platform) and the organizations themselves (the service reads them by id before it
knows whom it acts for)."""

_VISIBLE_DISCIPLINES = (
    "SELECT d.id FROM disciplines d "
    f"WHERE d.organization_id IS NULL OR d.organization_id = {ACTING}"
)
_WRITABLE_DISCIPLINES = (
    "SELECT d.id FROM disciplines d "
    f"WHERE d.organization_id = {ACTING} OR (d.organization_id IS NULL AND {ACTING} IS NULL)"
)
CHILD_CONDITION = f"discipline_id IN ({_VISIBLE_DISCIPLINES})"
"""A node of the tree is seen where its discipline is: the organization's and the global
ones. The subquery names no column of the outer row, so PostgreSQL runs it once a
statement and probes its hashed result row by row: a tree read by ``discipline_id``
pays one look-up of the caller's disciplines (by their ``organization_id`` index), not
one a row."""
CHILD_CHECK = f"discipline_id IN ({_WRITABLE_DISCIPLINES})"
"""...and written only under a discipline the transaction may write: its organization's
own, or (setting none, an operator) a global one."""


def protect_discipline_children(connection: Connection) -> None:
    """Give the discipline tree's tables below ``disciplines`` row-level security and
    the tenant policy through their discipline (the ``rls_0003`` migration)."""
    for name in DISCIPLINE_CHILD_TABLES:
        set_policies(connection, name, using=CHILD_CONDITION, check=CHILD_CHECK, delete=CHILD_CHECK)


def unprotect_discipline_children(connection: Connection) -> None:
    """Undo ``protect_discipline_children`` (the ``rls_0003`` downgrade)."""
    for name in DISCIPLINE_CHILD_TABLES:
        drop_policies(connection, name)


def unprotect_tenant_tables(connection: Connection) -> None:
    """Undo ``protect_tenant_tables`` (the ``rls_0001`` downgrade)."""
    for row in connection.execute(TENANT_TABLES):
        drop_policies(connection, str(row[0]))


def is_protected(connection: Connection) -> bool:
    """The ``rls_0001`` migration ran (some table has the tenant policy)."""
    found = connection.execute(
        text("SELECT 1 FROM pg_policy WHERE polname = :policy LIMIT 1"), {"policy": POLICY_NAME}
    )
    return found.first() is not None


def grant_service(connection: Connection, roles: list[str]) -> None:
    """Let ``roles`` (the service's, the every-organization role) read and write every
    table and sequence of the current schema, owning none. A role that does not exist is
    skipped (no row security configured)."""
    quote = connection.dialect.identifier_preparer.quote
    existing = {
        str(row[0])
        for row in connection.execute(
            text("SELECT rolname FROM pg_roles WHERE rolname = ANY(:names)"), {"names": roles}
        )
    }
    schema = quote(str(connection.execute(text("SELECT current_schema()")).scalar_one()))
    for role in roles:
        if role not in existing:
            continue
        name = quote(role)
        connection.execute(text(f"GRANT USAGE ON SCHEMA {schema} TO {name}"))
        connection.execute(
            text(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {name}")
        )
        connection.execute(
            text(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {name}")
        )
        connection.execute(text(f"REVOKE INSERT, UPDATE, DELETE ON alembic_version FROM {name}"))


ROLE_FACTS = text(
    f"""
    SELECT r.rolname,
      r.rolsuper OR r.rolbypassrls,
      EXISTS (SELECT 1 FROM pg_class c WHERE c.relowner = r.oid AND c.relrowsecurity),
      (SELECT count(*) FROM ({_UNPROTECTED}) AS unprotected)
        + (SELECT count(*) FROM pg_class c
           WHERE c.relnamespace = current_schema()::regnamespace
             AND c.relname = ANY(:children) AND NOT (c.relrowsecurity AND EXISTS (
               SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = :policy))),
      EXISTS (SELECT 1 FROM pg_roles e
              WHERE e.rolname = :every AND pg_has_role(r.oid, e.oid, 'MEMBER')),
      EXISTS (SELECT 1 FROM pg_roles e WHERE e.rolname = :every AND e.rolbypassrls)
    FROM pg_roles r WHERE r.rolname = current_user
    """
).bindparams(policy=POLICY_NAME, shared=list(SHARED_TABLES), children=list(DISCIPLINE_CHILD_TABLES))
"""What the start-up check needs of the connected role (``Database.check_row_security``):
its name, whether it bypasses row security, whether it owns a protected table, how many
tenant tables (the discipline tree's included) lack the policy, whether it may take the
every-organization role and whether that role bypasses row security."""

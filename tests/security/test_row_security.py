"""Row-level security on PostgreSQL (docs/deploy.md, "Two database roles"): the service
connects as a role that owns no table, every tenant table has the tenant policy, a
statement that forgets its organization filter still sees only the caller's rows, a
write into another organization is refused by the database, and the one narrow path
across organizations (the marked look-ups) still finds what it must.

These tests always run under row security, whatever ``QUESTLINE_TEST_ROW_SECURITY``
says for the rest of the suite."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from alembic import command
from sqlalchemy import delete, func, select, text, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from questline.audit.models import AuditEntry
from questline.auth import scim_tokens
from questline.config import Settings
from questline.disciplines.models import Discipline, Resource, ResourceOwner
from questline.events.models import Event
from questline.models import Base
from questline.progress.hooks import before_tasks_removed
from questline.storage import tenancy
from questline.storage.db import Database, RowSecurityMisconfigured
from questline.storage.many_rows import write_rows
from questline.storage.migrate import alembic_config, upgrade
from questline.teams.models import Team
from questline.web.errors import Conflict
from questline.web.identity import Role
from questline.webhooks.dispatcher import Dispatcher
from tests.bulk.factories import csv_text, post_csv, post_json, team_names
from tests.conftest import TEST_SETTINGS
from tests.disciplines.factories import (
    create_discipline,
    discipline_document,
    editable,
    task_ids,
)
from tests.events.factories import listened_to
from tests.factories import Org, World, bearer
from tests.progress.factories import Tree, complete, make_discipline, score_of
from tests.scim.conftest import directory_for
from tests.support.harness import AppHarness
from tests.support.postgres import PostgresServer, create_row_security_database, run_sql
from tests.webhooks.receiver import Receiver, receiver
from tests.webhooks.support import subscribe

pytestmark = [pytest.mark.anyio, pytest.mark.postgres_only]


@pytest.fixture(scope="session")
def row_security_settings(
    backend: str, postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Settings:
    assert backend == "postgresql"
    owner_url, service_url = create_row_security_database(postgres_server)
    data_dir: Path = tmp_path_factory.mktemp("data-row-security")
    settings = Settings(
        data_dir=data_dir,
        database_url=service_url,
        database_owner_url=owner_url,
        database_row_security=True,
        **TEST_SETTINGS,
    )
    upgrade(settings)
    return settings


@pytest.fixture
def settings(row_security_settings: Settings) -> Settings:
    """Webhooks may reach the loopback receiver (as in tests/webhooks)."""
    return row_security_settings.model_copy(
        update={"webhooks_allow_private_urls": True, "webhooks_timeout_seconds": 5}
    )


@pytest.fixture
def hook_receiver() -> Iterator[Receiver]:
    with receiver() as found:
        yield found


async def two_organizations(world: World) -> tuple[Org, Org]:
    a, b = world.org(), world.org()
    for org in (a, b):
        await org.create_team("Rockets")
        await org.create_team(f"Only {org.id}")
    return a, b


async def test_the_service_connects_as_a_role_that_owns_no_table(app_state: AppHarness) -> None:
    async with app_state.db.engine.connect() as connection:
        user = await connection.scalar(text("SELECT current_user"))
        owned = await connection.scalar(
            text(
                "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
                "WHERE r.rolname = current_user AND c.relkind = 'r'"
            )
        )
    assert user == "questline_service"
    assert owned == 0
    await app_state.db.check_row_security(app_state.settings)  # start-up accepts it


async def test_every_table_with_an_organization_has_the_tenant_policy(
    app_state: AppHarness,
) -> None:
    """A table a later migration adds with an ``organization_id`` fails here until it
    has the policy (``migrations/env.py`` gives it one on every upgrade)."""
    tenant_tables = {
        table.name
        for table in Base.metadata.sorted_tables
        if "organization_id" in table.c and table.name not in tenancy.SHARED_TABLES
    }
    assert {"teams", "members", "scim_tokens", "webhooks"} <= tenant_tables
    async with app_state.db.engine.connect() as connection:
        unprotected = (await connection.execute(tenancy.UNPROTECTED_TABLES)).scalars().all()
        protected = set(
            (
                await connection.execute(
                    text(
                        "SELECT c.relname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid "
                        "WHERE p.polname = :name AND c.relrowsecurity"
                    ),
                    {"name": tenancy.POLICY_NAME},
                )
            )
            .scalars()
            .all()
        )
    assert unprotected == []
    assert tenant_tables <= protected


async def test_a_statement_that_forgets_its_organization_sees_only_the_callers_rows(
    world: World, app_state: AppHarness
) -> None:
    a, b = await two_organizations(world)
    for org, other in ((a, b), (b, a)):
        with tenancy.acting_for(org.id):
            async with app_state.db.session(write=False) as session:
                # No organization filter: the policy adds it.
                seen = (await session.execute(select(Team.organization_id, Team.name))).all()
                rockets = await session.scalar(
                    select(func.count()).select_from(Team).where(Team.name == "Rockets")
                )
        assert {row.organization_id for row in seen} == {org.id}
        assert f"Only {other.id}" not in {row.name for row in seen}
        assert rockets == 1
    # A transaction that set no organization sees no tenant row at all.
    async with app_state.db.session(write=False) as session:
        assert await session.scalar(select(func.count()).select_from(Team)) == 0


async def test_the_api_still_answers_each_organization_its_own(world: World) -> None:
    a, b = await two_organizations(world)
    for org, other in ((a, b), (b, a)):
        names = {team["Name"] for team in await org.teams()}
        assert names == {"Rockets", f"Only {org.id}"}
        assert f"Only {other.id}" not in names


async def test_a_write_into_another_organization_is_refused(
    world: World, app_state: AppHarness
) -> None:
    a, b = await two_organizations(world)
    with tenancy.acting_for(a.id):
        async with app_state.db.session(write=True) as session:
            session.add(Team(organization_id=b.id, name="Intruders", name_key="intruders"))
            with pytest.raises(DBAPIError) as refused:
                await session.flush()
            await session.rollback()
    assert "row-level security" in str(refused.value.orig)
    # An update or delete without its filter reaches only the caller's own rows.
    with tenancy.acting_for(a.id):
        async with app_state.db.session(write=True) as session:
            renamed = await session.execute(update(Team).values(name="Renamed"))
    assert renamed.rowcount == 2  # type: ignore[attr-defined]
    assert {team["Name"] for team in await b.teams()} == {"Rockets", f"Only {b.id}"}


async def test_an_update_cannot_move_a_row_into_another_organization(
    world: World, app_state: AppHarness
) -> None:
    a, b = await two_organizations(world)
    with tenancy.acting_for(a.id), pytest.raises(DBAPIError):
        async with app_state.db.session(write=True) as session:
            await session.execute(update(Team).values(organization_id=b.id))
    assert len(await a.teams()) == 2


async def test_the_pre_authentication_look_up_finds_the_organization(
    world: World, app_state: AppHarness
) -> None:
    """A SCIM token names its organization: the look-up (``@finds_the_organization``)
    reads across organizations, and the request then acts for the one it found."""
    a, b = await two_organizations(world)
    created = await a.client.post(
        "/organization/scim-tokens", json={"Label": "Okta"}, headers=a.admin
    )
    assert created.status_code == 201, created.text
    token = created.json()["Token"]
    # Outside the marked look-up, a transaction that acts for no organization (or for
    # another one) does not see the token's row.
    for acting in (None, b.id):
        with tenancy.acting_for(acting):
            async with app_state.db.session(write=False) as session:
                rows = await session.scalar(
                    select(func.count()).select_from(scim_tokens.ScimTokenRecord)
                )
        assert rows == 0
    async with app_state.db.session(write=False) as session:
        found = await scim_tokens.find_live(session, token)
        # The look-up left the every-organization role behind it.
        assert await session.scalar(text("SELECT current_user")) == "questline_service"
    assert found is not None
    assert found.organization_id == a.id
    users = await a.client.get("/scim/v2/Users", headers={"Authorization": f"Bearer {token}"})
    assert users.status_code == 200, users.text
    # The use is recorded on the token's row: the request acted for its organization.
    listed = (await a.client.get("/organization/scim-tokens", headers=a.admin)).json()
    assert listed[0]["LastUsedAt"] is not None


async def test_the_lean_reads_and_progress_writes_act_for_the_caller(
    world: World, app_state: AppHarness
) -> None:
    """The paths that skip the session (``Database.driver_acting_for``) set the
    organization too: the group-committed progress write and the lean read of a team
    succeed for its owner, and the team stays invisible to the other organization."""
    a, b = await two_organizations(world)
    team = await a.create_team("Lean")
    with tenancy.acting_for(a.id):
        tree = await make_discipline(app_state.db, org_id=a.id, shape=[[[3, 4]]])
    writes = app_state.progress_writes
    before = writes.writes
    done = await complete(a, team["Id"], tree.tasks[0])
    assert done.status_code == 201, done.text
    assert writes.writes == before + 1  # the group commit wrote it, acting for a
    lean: list[str] = []
    app_state.readmodel.lean.listeners.append(lean.append)
    assert await score_of(a, team["Id"]) == 3
    assert lean  # read by the lean path, acting for a
    theirs = await b.client.get(f"/team/{team['Id']}", headers=b.admin)
    assert theirs.status_code == 404, theirs.text
    refused = await complete(b, team["Id"], tree.tasks[1])
    assert refused.status_code == 404, refused.text
    assert await score_of(a, team["Id"]) == 3


async def test_a_transaction_sets_its_organization_with_its_begin(
    world: World, app_state: AppHarness
) -> None:
    """The organization rides on ``BEGIN`` (``tenancy.ActingConnection``): a session's
    transaction costs no round trip for it. This also pins the driver: asyncpg starts a
    transaction by executing ``BEGIN …`` without arguments; a version that began
    otherwise would leave the setting unsent, and this test names that."""
    a, _b = await two_organizations(world)
    sent: list[str] = []
    async with app_state.db.engine.connect() as connection:
        raw = await connection.get_raw_connection()
        driver = raw.driver_connection
        assert isinstance(driver, tenancy.ActingConnection)

        def log(record: Any) -> None:
            sent.append(record.query)

        driver.add_query_logger(log)
        try:
            with tenancy.acting_for(a.id):
                names = (await connection.execute(select(Team.name))).scalars().all()
            await connection.rollback()
        finally:
            driver.remove_query_logger(log)
    assert sorted(names) == ["Only " + str(a.id), "Rockets"]
    begins = [query for query in sent if query.startswith("BEGIN")]
    assert len(begins) == 1, f"asyncpg began the transaction some other way: {sent}"
    assert f"set_config('{tenancy.ORG_SETTING}', '{a.id}', true)" in begins[0]
    assert not any(query.startswith("SELECT set_config") for query in sent)


async def test_a_connection_left_acting_for_an_organization_hands_it_to_no_transaction(
    world: World, app_state: AppHarness
) -> None:
    """A direct connection keeps the organization of the last lean read or group commit
    as a session-level setting (``Database.driver_acting_for``). A transaction begun on
    it acting for no organization sees nothing, one acting for another organization
    sees that one's rows, and a statement outside a transaction sees the kept one."""
    a, b = await two_organizations(world)
    db = app_state.db
    async with db.driver_connection(keep_organization_of=str(a.id)) as driver:
        count = "SELECT count(*) FROM teams"
        assert await driver.fetchval(count) == 2  # a's teams, outside a transaction
        await driver.execute("BEGIN")  # acting for no organization
        assert await driver.fetchval(count) == 0
        await driver.execute("COMMIT")
        with tenancy.acting_for(b.id):
            await driver.execute("BEGIN")
        names = {row[0] for row in await driver.fetch("SELECT name FROM teams")}
        await driver.execute("COMMIT")
        assert names == {"Rockets", f"Only {b.id}"}
        assert await driver.fetchval(count) == 2
    async with db.driver_acting_for(b.id) as driver:
        names = {row[0] for row in await driver.fetch("SELECT name FROM teams")}
    assert names == {"Rockets", f"Only {b.id}"}


async def test_behind_a_transaction_pooler_the_driver_paths_act_in_one_transaction(
    world: World, app_state: AppHarness
) -> None:
    """Behind a transaction pooler a session-level setting would stay on a server
    connection another client gets next: there ``driver_acting_for`` runs its
    statements in one transaction that sets the organization with its ``BEGIN``, and
    leaves nothing on the connection."""
    a, _b = await two_organizations(world)
    settings = app_state.settings.model_copy(
        update={"database_transaction_pooler": True, "database_pool_size": 1}
    )
    db = Database(settings)
    try:
        assert db.statements_share_a_transaction
        async with db.driver_acting_for(a.id) as driver:
            assert await driver.fetchval("SELECT count(*) FROM teams") == 2
            first = await driver.fetchval("SELECT txid_current()")
            assert await driver.fetchval("SELECT txid_current()") == first
        async with db.driver_connection() as driver:
            assert await driver.fetchval("SELECT count(*) FROM teams") == 0
            left = await driver.fetchval(f"SELECT current_setting('{tenancy.ORG_SETTING}', true)")
            assert left in (None, "")
    finally:
        await db.dispose()


async def test_global_disciplines_are_shared_and_written_by_no_organization(
    world: World, app_state: AppHarness
) -> None:
    """A discipline without an organization is every organization's to read and no
    organization's to write: its update is refused, its delete reaches no row (the
    restrictive policy for ``DELETE``), and a new one is refused."""
    a, _b = await two_organizations(world)
    shared = await make_discipline(app_state.db, org_id=None, shape=[[[1]]])
    with tenancy.acting_for(a.id):
        async with app_state.db.session(write=False) as session:
            seen = set((await session.execute(select(Discipline.id))).scalars().all())
        assert shared.id in seen
        async with app_state.db.session(write=True) as session:
            rename = update(Discipline).where(Discipline.id == shared.id).values(title="Mine")
            with pytest.raises(DBAPIError) as refused:
                await session.execute(rename)
            await session.rollback()
        assert "row-level security" in str(refused.value.orig)
        async with app_state.db.session(write=True) as session:
            gone = delete(Discipline).where(Discipline.id == shared.id)
            assert (await session.execute(gone)).rowcount == 0  # type: ignore[attr-defined]
        with pytest.raises(DBAPIError) as refused:
            async with app_state.db.session(write=True) as session:
                session.add(Discipline(organization_id=None, title="Mine", description=""))
        assert "row-level security" in str(refused.value.orig)
        async with app_state.db.session(write=False) as session:
            title = await session.scalar(select(Discipline.title).where(Discipline.id == shared.id))
    assert title == shared.title


async def test_bulk_import_copies_through_a_staging_table_the_policy_checks(
    world: World, app_state: AppHarness
) -> None:
    """PostgreSQL refuses ``COPY FROM`` into a table with row security for the service's
    role: ``write_rows`` copies into a temporary table and moves the rows with one
    ``INSERT … SELECT``, which the policy checks row by row. Bulk import (JSON and CSV,
    teams and memberships in one transaction) answers 201 for the caller's organization
    only."""
    a, b = await two_organizations(world)
    member = await a.create_member()
    made = await post_json(
        a, [{"name": "Bulk one", "members": [member["Id"]]}, {"name": "Bulk two"}]
    )
    assert made.status_code == 201, made.text
    assert [t["MemberCount"] for t in made.json()] == [1, 0]
    uploaded = await post_csv(
        a, csv_text([("Bulk three", "cy@example.org", "Cy", "red"), ("Bulk four", "", "", "")])
    )
    assert uploaded.status_code == 201, uploaded.text
    names = set(await team_names(a))
    assert {"Bulk one", "Bulk two", "Bulk three", "Bulk four"} <= names
    assert not {"Bulk one", "Bulk three"} & set(await team_names(b))
    one = made.json()[0]["Id"]
    detail = await a.client.get(f"/team/{one}", headers=a.admin)
    assert [m["Email"] for m in detail.json()["Members"]] == [member["Email"]]
    # The staged rows go through the policy: a row of another organization is refused.
    with tenancy.acting_for(a.id), pytest.raises(DBAPIError) as refused:
        async with app_state.db.session(write=True) as session:
            await write_rows(
                session,
                Team.__table__,  # type: ignore[arg-type]
                ("id", "organization_id", "name", "name_key", "tags"),
                [(uuid.uuid4(), b.id, "Smuggled", "smuggled", [])],
            )
    assert "row-level security" in str(refused.value.orig)
    assert "Smuggled" not in await team_names(b)


async def test_scim_groups_with_members_are_written_under_row_security(world: World) -> None:
    """A SCIM group is a team written with its members by ``write_rows`` as well."""
    org = world.org()
    directory = await directory_for(org, world)
    user = await directory.create_user("grace@example.org", "Grace")
    group = await directory.create_group("Hoppers", [user["id"]])
    read = await directory.request("GET", f"/Groups/{group['id']}")
    assert read.status_code == 200, read.text
    assert [m["value"] for m in read.json()["members"]] == [user["id"]]


async def test_start_up_refuses_a_role_that_bypasses_the_policies(settings: Settings) -> None:
    """One role only (the owner) with row security on: the service refuses to start."""
    assert settings.database_owner_url is not None
    as_owner = settings.model_copy(update={"database_url": settings.database_owner_url})
    db = Database(as_owner)
    try:
        with pytest.raises(RowSecurityMisconfigured, match="owns the tables") as refused:
            await db.check_row_security(as_owner)
        # The way out for a deployment with one role, named where it stops.
        assert "QUESTLINE_DATABASE_ROW_SECURITY=false" in str(refused.value)
    finally:
        await db.dispose()


def test_row_security_is_on_by_default_on_postgresql_only(tmp_path: Path) -> None:
    """Unset, the setting is on: a PostgreSQL deployment runs under the policies unless
    it says otherwise; SQLite has none."""
    url = "postgresql+asyncpg://questline_service@db.internal/questline"
    assert Settings(_env_file=None, data_dir=tmp_path, database_url=url).row_security
    assert not Settings(_env_file=None, data_dir=tmp_path).row_security


async def test_start_up_refuses_the_service_role_with_row_security_off(
    settings: Settings,
) -> None:
    """The service's role under the policies but the setting off would see nothing."""
    off = settings.model_copy(update={"database_row_security": False})
    db = Database(off)
    try:
        with pytest.raises(RowSecurityMisconfigured, match="would see no"):
            await db.check_row_security(off)
    finally:
        await db.dispose()


async def test_the_owner_sees_every_organization(world: World, settings: Settings) -> None:
    """Migrations and operators' maintenance run as the owner, whom the policies do not
    bind (no FORCE ROW LEVEL SECURITY)."""
    a, b = await two_organizations(world)
    assert settings.database_owner_url is not None
    engine = create_async_engine(settings.database_owner_url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            organizations = set(
                (await connection.execute(select(Team.organization_id))).scalars().all()
            )
    finally:
        await engine.dispose()
    assert organizations == {a.id, b.id}


async def test_a_dashboard_session_reads_its_own_organization(
    world: World, client: httpx.AsyncClient
) -> None:
    """The session cookie is the other pre-authentication look-up: signing in, reading
    the session and listing teams with the cookie all act for the cookie's
    organization."""
    a, b = await two_organizations(world)
    made = await client.post("/auth/session", json={"IdToken": a.admin_token})
    assert made.status_code == 201, made.text
    assert made.json()["Role"] == "admin"
    again = await client.get("/auth/session")
    assert again.status_code == 200, again.text
    teams = await client.get("/team")
    assert teams.status_code == 200, teams.text
    assert {team["Name"] for team in teams.json()} == {"Rockets", f"Only {a.id}"}
    assert f"Only {b.id}" not in {team["Name"] for team in teams.json()}


async def test_a_signin_link_from_the_command_line_signs_in_to_its_organization(
    world: World, client: httpx.AsyncClient, settings: Settings
) -> None:
    """``questline signin-link --org`` acts for the organization it is given, and
    spending the code (a marked look-up by the code's digest) signs in to that one."""
    from questline.cli.main import _mint_signin_link

    a, b = await two_organizations(world)
    link = await _mint_signin_link(
        settings, org_id=a.id, role=Role.ADMIN, subject="cli", email=None
    )
    code = link.split("#code=", 1)[1]
    made = await client.post("/auth/session", json={"Code": code})
    assert made.status_code == 201, made.text
    teams = await client.get("/team")
    assert teams.status_code == 200, teams.text
    assert {team["Name"] for team in teams.json()} == {"Rockets", f"Only {a.id}"}
    assert f"Only {b.id}" not in {team["Name"] for team in teams.json()}
    spent = await client.post("/auth/session", json={"Code": code})
    assert spent.status_code == 401, spent.text


async def test_the_webhook_dispatcher_serves_every_organization_its_own_events(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    """The outbox's fan-out and the dispatcher's pass run as the every-organization
    role (``@serves_every_organization``): each organization's event reaches its own
    webhook, and no other."""
    a, b = world.org(), world.org()
    await subscribe(a, f"{hook_receiver.url}?org=a", ["team.created"])
    await subscribe(b, f"{hook_receiver.url}?org=b", ["team.created"])
    made = {org.id: await org.create_team(f"Hooked {org.id}") for org in (a, b)}
    dispatcher = Dispatcher(app_state.settings, app_state.db, consumers=app_state.outbox_consumers)
    try:
        for _ in range(50):
            await dispatcher.run_once()
            await dispatcher.settle()
            if len(hook_receiver.requests) >= 2:
                break
    finally:
        await dispatcher.stop()
    got = sorted((r.path, r.json()["data"]["Name"]) for r in hook_receiver.requests)
    assert got == [("/hook?org=a", made[a.id]["Name"]), ("/hook?org=b", made[b.id]["Name"])]


def test_upgrades_protect_a_tenant_table_a_later_migration_adds(
    backend: str, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """Every upgrade gives a new table with an ``organization_id`` the policy (a
    revision chained after ``rls_0001`` need not remember it), and ``rls_0001``'s
    downgrade takes the policies away again."""
    assert backend == "postgresql"  # postgres_only: SQLite has no row security
    owner_url, service_url = create_row_security_database(postgres_server)
    settings = Settings(
        data_dir=tmp_path,
        database_url=service_url,
        database_owner_url=owner_url,
        database_row_security=True,
        **TEST_SETTINGS,
    )
    upgrade(settings)
    run_sql(owner_url, "CREATE TABLE later_tenant (organization_id uuid NOT NULL, note text)")
    upgrade(settings)  # at head already: only the environment's hook runs
    assert policies(owner_url) >= {"later_tenant", "teams", "disciplines"}
    command.downgrade(alembic_config(settings), "platform_0001")
    assert policies(owner_url) == set()
    upgrade(settings)
    assert policies(owner_url) >= {"later_tenant", "teams", "disciplines"}


def policies(url: str) -> set[str]:
    """The tables that have row security on and the tenant policy."""

    async def read() -> set[str]:
        connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
        try:
            rows = await connection.fetch(
                "SELECT c.relname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid "
                "WHERE p.polname = $1 AND c.relrowsecurity",
                tenancy.POLICY_NAME,
            )
        finally:
            await connection.close()
        return {str(row["relname"]) for row in rows}

    return asyncio.run(read())


async def test_every_tenant_table_and_every_table_below_one_has_a_policy(
    app_state: AppHarness,
) -> None:
    """Every table of the schema is a tenant table (an ``organization_id``, or a foreign
    key that leads to one: the discipline tree's levels, quests, tasks and resources)
    with row security on and the tenant policy, a shared table by design
    (``tenancy.SHARED_TABLES``), or one that holds no organization's data
    (``tenancy.NON_TENANT_TABLES``). A new table that is none of these fails here until
    it has its policy or its reason."""
    async with app_state.db.engine.connect() as connection:
        tables = {
            str(row.relname): (bool(row.has_org), bool(row.rowsecurity), bool(row.policy))
            for row in await connection.execute(
                text(
                    """
                    SELECT c.relname,
                      EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                              AND a.attname = 'organization_id' AND NOT a.attisdropped)
                        AS has_org,
                      c.relrowsecurity AS rowsecurity,
                      EXISTS (SELECT 1 FROM pg_policy p
                              WHERE p.polrelid = c.oid AND p.polname = :policy) AS policy
                    FROM pg_class c
                    WHERE c.relnamespace = current_schema()::regnamespace
                      AND c.relkind IN ('r', 'p')
                    """
                ),
                {"policy": tenancy.POLICY_NAME},
            )
        }
        parents = [
            (str(row.child), str(row.parent))
            for row in await connection.execute(
                text(
                    "SELECT c.relname AS child, p.relname AS parent FROM pg_constraint k "
                    "JOIN pg_class c ON c.oid = k.conrelid "
                    "JOIN pg_class p ON p.oid = k.confrelid "
                    "WHERE k.contype = 'f' "
                    "AND c.relnamespace = current_schema()::regnamespace"
                )
            )
        ]
    shared = set(tenancy.SHARED_TABLES)
    tenant = {name for name, (has_org, _, _) in tables.items() if has_org} - shared
    # A table reaches an organization through a parent that is a tenant table (or the
    # organizations themselves).
    grown = True
    while grown:
        below = {
            child
            for child, parent in parents
            if parent in tenant | {"organizations"} and child not in shared
        }
        grown = not below <= tenant
        tenant |= below
    assert set(tenancy.DISCIPLINE_CHILD_TABLES) <= tenant - {
        name for name, (has_org, _, _) in tables.items() if has_org
    }
    unprotected = sorted(name for name in tenant if not (tables[name][1] and tables[name][2]))
    assert unprotected == []
    unexplained = sorted(set(tables) - tenant - shared - set(tenancy.NON_TENANT_TABLES))
    assert unexplained == []


TREE_TABLES = ("levels", "quests", "tasks", "resources")


async def tree_with_resources(db: Database, org_id: uuid.UUID | None) -> Tree:
    """A discipline of ``org_id`` (None: global) with a resource on each kind of node."""
    tree = await make_discipline(db, org_id=org_id, shape=[[[2, 3]]])
    owners = [
        (ResourceOwner.DISCIPLINE, tree.id),
        (ResourceOwner.LEVEL, tree.level_ids[0]),
        (ResourceOwner.QUEST, tree.quest_ids[0][0]),
        (ResourceOwner.TASK, tree.task_ids[0][0][0]),
    ]
    with tenancy.acting_for(org_id):
        async with db.session(write=True) as session:
            for position, (kind, owner_id) in enumerate(owners):
                session.add(
                    Resource(
                        discipline_id=tree.id,
                        owner_kind=kind,
                        owner_id=owner_id,
                        position=position,
                        title=f"Read {kind.value}",
                        url="https://example.org/read",
                    )
                )
    return tree


async def raw_counts(db: Database, acting: uuid.UUID | None, tree: Tree) -> dict[str, int]:
    """How many rows of ``tree`` each table of the tree shows, by a raw statement that
    names the discipline and no organization."""
    counts: dict[str, int] = {}
    with tenancy.acting_for(acting):
        async with db.session(write=False) as session:
            for table in TREE_TABLES:
                counts[table] = int(
                    await session.scalar(
                        text(f"SELECT count(*) FROM {table} WHERE discipline_id = :d"),
                        {"d": tree.id},
                    )
                    or 0
                )
    return counts


async def test_another_organization_cannot_read_a_discipline_tree_even_by_raw_statement(
    world: World, app_state: AppHarness
) -> None:
    """Levels, quests, tasks and resources carry no ``organization_id``: their policy
    follows ``discipline_id`` to the discipline. Organization B sees none of A's tree,
    even by a raw statement that names the discipline and no organization; a transaction
    that acts for no organization sees none either; both see a global tree."""
    a, b = await two_organizations(world)
    theirs = await tree_with_resources(app_state.db, a.id)
    shared = await tree_with_resources(app_state.db, None)
    full = {"levels": 1, "quests": 1, "tasks": 2, "resources": 4}
    assert await raw_counts(app_state.db, a.id, theirs) == full
    nothing = dict.fromkeys(TREE_TABLES, 0)
    assert await raw_counts(app_state.db, b.id, theirs) == nothing
    assert await raw_counts(app_state.db, None, theirs) == nothing
    assert await raw_counts(app_state.db, b.id, shared) == full
    assert await raw_counts(app_state.db, a.id, shared) == full
    # Without a filter at all, B's statements see only the global tree's nodes.
    with tenancy.acting_for(b.id):
        async with app_state.db.session(write=False) as session:
            seen = set(
                (await session.execute(text("SELECT DISTINCT discipline_id FROM tasks")))
                .scalars()
                .all()
            )
    assert theirs.id not in seen
    assert shared.id in seen


async def test_another_organization_cannot_write_a_discipline_tree_even_by_raw_statement(
    world: World, app_state: AppHarness
) -> None:
    """B's updates and deletes of A's nodes reach no row; B's deletes of a global
    tree's nodes (the discipline itself included) reach none either, and its updates of
    them are refused; B's inserts under A's discipline, or under a global one, are
    refused by the database; A still writes its own."""
    a, b = await two_organizations(world)
    theirs = await tree_with_resources(app_state.db, a.id)
    shared = await tree_with_resources(app_state.db, None)
    for table in (*TREE_TABLES, "disciplines"):
        where = "WHERE " + ("id" if table == "disciplines" else "discipline_id") + " = :d"
        for tree in (theirs, shared):
            with tenancy.acting_for(b.id):
                async with app_state.db.session(write=True) as session:
                    gone = await session.execute(
                        text(f"DELETE FROM {table} {where}"), {"d": tree.id}
                    )
                    assert gone.rowcount == 0, table  # type: ignore[attr-defined]
                    rename = text(f"UPDATE {table} SET title = 'Taken' {where}")
                    if tree is theirs:  # not B's to see
                        changed = await session.execute(rename, {"d": tree.id})
                        assert changed.rowcount == 0, table  # type: ignore[attr-defined]
            if tree is shared:  # B sees it, and may not change it
                with tenancy.acting_for(b.id), pytest.raises(DBAPIError) as refused:
                    async with app_state.db.session(write=True) as session:
                        await session.execute(rename, {"d": tree.id})
                assert "row-level security" in str(refused.value.orig), table
    full = {"levels": 1, "quests": 1, "tasks": 2, "resources": 4}
    assert await raw_counts(app_state.db, a.id, theirs) == full
    assert await raw_counts(app_state.db, a.id, shared) == full
    intrusions = {
        "levels": (
            "INSERT INTO levels (id, discipline_id, position, title, description) "
            "VALUES (:id, :d, 9, 'Taken', '')"
        ),
        "quests": (
            "INSERT INTO quests (id, discipline_id, level_id, position, title, description) "
            "VALUES (:id, :d, :level, 9, 'Taken', '')"
        ),
        "tasks": (
            "INSERT INTO tasks (id, discipline_id, level_id, quest_id, position, title, "
            "description, points, check_kind) "
            "VALUES (:id, :d, :level, :quest, 9, 'Taken', '', 1, 'Admin')"
        ),
        "resources": (
            "INSERT INTO resources (id, discipline_id, owner_kind, owner_id, position, "
            "title, description, url, kind) "
            "VALUES (:id, :d, 'discipline', :d, 9, 'Taken', '', 'https://x.test', 'Link')"
        ),
    }
    for tree in (theirs, shared):
        for table, statement in intrusions.items():
            values = {
                "id": uuid.uuid4(),
                "d": tree.id,
                "level": tree.level_ids[0],
                "quest": tree.quest_ids[0][0],
            }
            with tenancy.acting_for(b.id), pytest.raises(DBAPIError) as refused:
                async with app_state.db.session(write=True) as session:
                    await session.execute(text(statement), values)
            assert "row-level security" in str(refused.value.orig), table
    # Nor can B move one of its own nodes under A's discipline.
    mine = await tree_with_resources(app_state.db, b.id)
    with tenancy.acting_for(b.id), pytest.raises(DBAPIError) as moved:
        async with app_state.db.session(write=True) as session:
            await session.execute(
                text("UPDATE tasks SET discipline_id = :theirs WHERE discipline_id = :mine"),
                {"theirs": theirs.id, "mine": mine.id},
            )
    assert "row-level security" in str(moved.value.orig)
    # A writes its own tree.
    with tenancy.acting_for(a.id):
        async with app_state.db.session(write=True) as session:
            renamed = await session.execute(
                text("UPDATE tasks SET title = 'Renamed' WHERE discipline_id = :d"),
                {"d": theirs.id},
            )
    assert renamed.rowcount == 2  # type: ignore[attr-defined]
    assert await raw_counts(app_state.db, b.id, theirs) == dict.fromkeys(TREE_TABLES, 0)


async def test_an_operator_writes_a_global_discipline_and_only_the_platform_sees_its_rows(
    world: World, app_state: AppHarness
) -> None:
    """An operator acts for no organization: the global discipline, its event and its
    audit entry (the platform's rows, ``tenancy.PLATFORM``) are accepted; an
    organization's transaction sees none of the platform's rows, and a transaction
    that acts for none sees no organization's."""
    a, _b = await two_organizations(world)
    await listened_to(a)  # a consumer listens: its events are recorded
    await a.create_team("Listened")  # one of them
    created = await world.client.post(
        "/discipline",
        json={"Title": "Global", "Description": "For all"},
        headers=bearer(world.operator_token()),
    )
    assert created.status_code == 201, created.text
    platform = {}
    for acting in (None, a.id):
        with tenancy.acting_for(acting):
            async with app_state.db.session(write=False) as session:
                platform[acting] = {
                    str(table.name): set(
                        (await session.execute(select(table.c.organization_id))).scalars().all()
                    )
                    for table in (Event.__table__, AuditEntry.__table__)
                }
    assert platform[None] == {"events": {tenancy.PLATFORM}, "audit_entries": {tenancy.PLATFORM}}
    assert platform[a.id]["events"] == {a.id}  # its teams' events, no platform row
    assert tenancy.PLATFORM not in platform[a.id]["audit_entries"]


async def _team_rows(db: Database, org_id: uuid.UUID, team_id: str) -> tuple[int, int, int]:
    """The team's score, version and ``progress.withdrawn`` events, read acting for its
    organization."""
    with tenancy.acting_for(org_id):
        async with db.session(write=False) as session:
            team = await session.get(Team, (org_id, uuid.UUID(team_id)))
            assert team is not None
            withdrawn = await session.scalar(
                select(func.count())
                .select_from(Event)
                .where(Event.organization_id == org_id, Event.type == "progress.withdrawn")
            )
            return team.score, team.version, int(withdrawn or 0)


async def _global_discipline_both_completed(
    world: World, app_state: AppHarness
) -> tuple[dict[str, Any], list[tuple[Org, str]]]:
    """A global discipline (two tasks of 6 points) whose two tasks a team of each of two
    organizations completed."""
    discipline = await create_discipline(
        world.client,
        bearer(world.operator_token()),
        discipline_document(levels=1, quests=1, tasks=2, points=6),
    )
    teams = []
    for org in await two_organizations(world):
        await listened_to(org)  # a consumer listens: its events are recorded
        team = await org.create_team("Global")
        for task in task_ids(discipline):
            assert (await complete(org, team["Id"], task)).status_code == 201
        teams.append((org, team["Id"]))
    return discipline, teams


async def test_an_operators_change_of_a_global_discipline_withdraws_in_every_organization(
    world: World, app_state: AppHarness
) -> None:
    """The operator acts for no organization; counting and withdrawing the progress in a
    global discipline's removed tasks is the marked path across organizations
    (``@across_a_global_discipline``): both organizations' teams are counted, lose the
    points, get a new version and their own ``progress.withdrawn`` event."""
    operator = bearer(world.operator_token())
    discipline, teams = await _global_discipline_both_completed(world, app_state)
    before = [await _team_rows(app_state.db, org.id, team) for org, team in teams]
    assert [(score, withdrawn) for score, _, withdrawn in before] == [(12, 0), (12, 0)]
    url = f"/discipline/{discipline['Id']}"
    document = editable(discipline)
    document["Levels"][0]["Quests"][0]["Tasks"] = document["Levels"][0]["Quests"][0]["Tasks"][:1]
    refused = await world.client.put(url, json=document, headers=operator)
    assert refused.status_code == 409, refused.text
    assert "2 teams" in refused.json()["detail"]
    forced = await world.client.put(f"{url}?force=true", json=document, headers=operator)
    assert forced.status_code == 200, forced.text
    after = [await _team_rows(app_state.db, org.id, team) for org, team in teams]
    for (_, version, _), (score, new_version, withdrawn) in zip(before, after, strict=True):
        assert (score, withdrawn) == (6, 1)
        assert new_version == version + 1
    for org, team in teams:
        assert await score_of(org, team) == 6
    deleted = await world.client.delete(f"{url}?force=true", headers=operator)
    assert deleted.status_code == 204, deleted.text
    assert [(await _team_rows(app_state.db, org.id, team))[::2] for org, team in teams] == [
        (0, 2),
        (0, 2),
    ]


async def test_an_organization_reaches_only_its_own_progress_when_tasks_are_removed(
    world: World, app_state: AppHarness
) -> None:
    """The marked path is the operator's only: an organization's admin cannot change a
    global discipline, and even where its transaction reaches the hook for one (acting
    for its organization), it counts and withdraws its own teams' progress and nobody
    else's. Its forced delete of its own discipline leaves the other organization's
    rows as they were."""
    discipline, ((a, a_team), (b, b_team)) = await _global_discipline_both_completed(
        world, app_state
    )
    url = f"/discipline/{discipline['Id']}"
    assert (await a.client.delete(f"{url}?force=true", headers=a.admin)).status_code == 403
    discipline_id = uuid.UUID(discipline["Id"])
    tasks = [uuid.UUID(t) for t in task_ids(discipline)]
    b_before = await _team_rows(app_state.db, b.id, b_team)
    with tenancy.acting_for(a.id):
        async with app_state.db.session(write=True) as session:
            with pytest.raises(Conflict) as counted:
                await before_tasks_removed(
                    session, discipline_id=discipline_id, task_ids=tasks, force=False
                )
            assert str(counted.value.detail).startswith("1 team has")
            await before_tasks_removed(
                session, discipline_id=discipline_id, task_ids=tasks, force=True
            )
    assert (await _team_rows(app_state.db, a.id, a_team))[::2] == (0, 2)
    assert await _team_rows(app_state.db, b.id, b_team) == b_before
    assert await score_of(b, b_team) == 12
    # A's forced delete of its own discipline, with its progress: B's rows stay.
    own = await create_discipline(
        world.client, a.admin, discipline_document(levels=1, quests=1, tasks=1, points=5)
    )
    assert (await complete(a, a_team, task_ids(own)[0])).status_code == 201
    gone = await a.client.delete(f"/discipline/{own['Id']}?force=true", headers=a.admin)
    assert gone.status_code == 204, gone.text
    assert (await _team_rows(app_state.db, a.id, a_team))[::2] == (0, 3)
    assert await _team_rows(app_state.db, b.id, b_team) == b_before

"""``questline``: serve, migrate, mint tokens, load the demo. Thin wrappers over services.

This module is imported by every command, ``--version`` included, so it imports only
what declaring the commands needs (Typer, the version, the roles). What
a command works with — the web framework, the database, the HTTP client of
``questline import`` — is imported inside that command, so that a command that needs
none of it (``--version``, ``token create``) starts without loading it.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from questline import __version__
from questline.cli.backup import backup_command, restore_command
from questline.web.identity import Role

if TYPE_CHECKING:
    from questline.auth.tokens import TokenService
    from questline.config import Settings

app = typer.Typer(
    help="Questline: teams, disciplines, progress and leaderboards.", no_args_is_help=True
)
db_app = typer.Typer(help="Database commands.", no_args_is_help=True)
token_app = typer.Typer(help="Token commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(token_app, name="token")
app.command("backup")(backup_command)
app.command("restore")(restore_command)


GUESSED_PUBLIC_URL = "http://127.0.0.1:8000"
"""The address printed links use when ``QUESTLINE_PUBLIC_URL`` is unset: ``questline
serve``'s default (a guess, and the command says so)."""


def _settings() -> Settings:
    """The settings from the environment. Imported here, not above: pydantic-settings is
    most of ``--version``'s start-up otherwise."""
    from questline.config import Settings

    return Settings()


def _tokens(settings: Settings) -> TokenService:
    """The token service (PyJWT and cryptography: imported by the commands that mint)."""
    from questline.auth.tokens import TokenService

    return TokenService(settings)


def _with_public_url(settings: Settings) -> Settings:
    """The settings for links printed for a person, who needs them absolute: the
    configured public address, else a guess, announced on stderr."""
    if settings.public_url:
        return settings
    typer.echo(
        f"warning: QUESTLINE_PUBLIC_URL is not set; the links printed here guess "
        f"{GUESSED_PUBLIC_URL}. If people reach the service at another address, set "
        f"QUESTLINE_PUBLIC_URL to it (e.g. https://questline.example.org) and run this again.",
        err=True,
    )
    return settings.model_copy(update={"public_url": GUESSED_PUBLIC_URL})


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"questline {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Questline: teams, disciplines, progress and leaderboards."""


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 1,
    migrate: Annotated[bool, typer.Option(help="Run `db upgrade` first.")] = True,
) -> None:
    """Serve the API (and the dashboard at /ui)."""
    import uvicorn

    from questline.logging_setup import configure_logging

    settings = _settings()
    configure_logging(settings.log_level, settings.log_format)
    if not settings.public_url:
        typer.echo(
            "warning: QUESTLINE_PUBLIC_URL is not set; the service does not guess its "
            "address: Location and Link headers and problem types are relative references "
            "(they resolve on the address each request came to). Set it to get absolute "
            "links, e.g. QUESTLINE_PUBLIC_URL=https://questline.example.org.",
            err=True,
        )
    if migrate:
        _upgrade(settings)
    if settings.is_sqlite and workers > 1:
        typer.echo("SQLite serves from one process; use PostgreSQL for several workers.", err=True)
        workers = 1
    from questline.web.server_options import uvicorn_options

    uvicorn.run(**uvicorn_options(settings, host=host, port=port, workers=workers))


def _upgrade(settings: Settings) -> None:
    from questline.storage.migrate import upgrade

    upgrade(settings)


@db_app.command("upgrade")
def db_upgrade(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log each migration as it runs.")
    ] = False,
) -> None:
    """Apply the database migrations (creates the SQLite file when needed)."""
    from questline.logging_setup import configure_logging
    from questline.storage.migrate import upgrade

    settings = _settings()
    if verbose:
        configure_logging("INFO", settings.log_format)
    upgrade(settings, verbose=verbose or None)
    typer.echo(f"database at head: {_redacted(settings.resolved_database_url)}")


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


@token_app.command("create")
def token_create(
    role: Annotated[
        Role, typer.Option(help="member, admin, operator, or scim (a directory's SCIM token).")
    ] = Role.ADMIN,
    org: Annotated[str | None, typer.Option(help="Organization UUID (not for operators).")] = None,
    subject: Annotated[str, typer.Option(help="The `sub` claim.")] = "cli",
    days: Annotated[int, typer.Option(help="Lifetime in days.")] = 30,
    email: Annotated[
        str | None,
        typer.Option(
            help="The `email` claim: the organization's member the token acts as (a "
            "learner answering, marking done, unlocking hints)."
        ),
    ] = None,
) -> None:
    """Mint a token with the embedded HS256 secret; the token is the last line printed.
    A scim token is stored instead (revocable through /organization/scim-tokens)."""
    import datetime as dt

    if role is not Role.OPERATOR and org is None:
        raise typer.BadParameter(
            "member, admin and scim tokens need --org UUID", param_hint="--org"
        )
    if role is Role.OPERATOR and org is not None:
        raise typer.BadParameter("operator tokens carry no organization", param_hint="--org")
    if email is not None and (role in (Role.OPERATOR, Role.SCIM) or "@" not in email):
        raise typer.BadParameter(
            "an e-mail address, for member and admin tokens only", param_hint="--email"
        )
    try:
        org_id = uuid.UUID(org) if org else None
    except ValueError as exc:
        raise typer.BadParameter("not a UUID", param_hint="--org") from exc
    settings = _settings()
    if role is Role.SCIM:
        # A directory's token is stored (revocable, listed by the organization's
        # admins): not a JWT, which could not be revoked.
        assert org_id is not None
        if not 1 <= days <= settings.scim_token_max_days:
            raise typer.BadParameter(
                f"a SCIM token lasts 1 to {settings.scim_token_max_days} days",
                param_hint="--days",
            )
        import asyncio

        token = asyncio.run(_issue_scim_token(settings, org_id=org_id, label=subject, days=days))
        typer.echo(token)
        return
    tokens = _tokens(settings)
    typer.echo(
        tokens.mint(
            role=role,
            org_id=org_id,
            subject=subject,
            lifetime=dt.timedelta(days=days),
            email=email,
        )
    )


async def _issue_scim_token(settings: Settings, *, org_id: uuid.UUID, label: str, days: int) -> str:
    """A stored SCIM token, as ``POST /organization/scim-tokens`` makes one (audited)."""
    import datetime as dt

    from questline import audit
    from questline.auth import scim_tokens
    from questline.storage import tenancy
    from questline.storage.db import Database

    db = Database(settings)
    try:
        with tenancy.acting_for(org_id):  # row-level security: the --org given
            async with db.session(write=True) as session:
                issued = await scim_tokens.issue(
                    session, org_id=org_id, label=label, lifetime=dt.timedelta(days=days)
                )
                await audit.record(  # never the token itself
                    session,
                    organization_id=org_id,
                    action="scim_token.created",
                    target=("scim_token", issued.record.id),
                    after={
                        "Label": issued.record.label,
                        "ExpiresAt": issued.record.expires_at.isoformat(),
                    },
                )
    finally:
        await db.dispose()
    return issued.token


async def _mint_signin_link(
    settings: Settings,
    *,
    org_id: uuid.UUID,
    role: Role,
    subject: str,
    email: str | None,
    minutes: int | None = None,
) -> str:
    import datetime as dt

    from questline.auth import sessions
    from questline.storage import tenancy
    from questline.storage.db import Database

    db = Database(settings)
    try:
        with tenancy.acting_for(org_id):  # row-level security: the --org given
            async with db.session(write=True) as session:
                code = await sessions.mint_signin_code(
                    session,
                    settings=settings,
                    org_id=org_id,
                    role=role,
                    subject=subject,
                    email=email,
                    lifetime=dt.timedelta(minutes=minutes) if minutes else None,
                )
    finally:
        await db.dispose()
    return sessions.signin_link(settings, code)


@app.command("signin-link")
def signin_link(
    org: Annotated[str, typer.Option(help="Organization UUID.")],
    role: Annotated[Role, typer.Option(help="member (read-only) or admin.")] = Role.ADMIN,
    subject: Annotated[str, typer.Option(help="Who signs in (shown in the dashboard).")] = "cli",
    email: Annotated[
        str | None, typer.Option(help="Their e-mail: teams with this member are theirs.")
    ] = None,
    minutes: Annotated[
        int | None, typer.Option(help="Minutes the link is valid (default 15).", min=1, max=1440)
    ] = None,
) -> None:
    """Mint a one-time dashboard sign-in link; the link is the last line printed."""
    if role is Role.OPERATOR:
        raise typer.BadParameter("the dashboard is for members and admins", param_hint="--role")
    try:
        org_id = uuid.UUID(org)
    except ValueError as exc:
        raise typer.BadParameter("not a UUID", param_hint="--org") from exc
    import asyncio

    settings = _with_public_url(_settings())
    link = asyncio.run(
        _mint_signin_link(
            settings, org_id=org_id, role=role, subject=subject, email=email, minutes=minutes
        )
    )
    typer.echo(f"one-time sign-in link for {subject} ({role.value}); open it once:")
    typer.echo(link)


@app.command()
def demo() -> None:
    """Migrate, load the demo organization when it is empty, print its URL and admin token."""
    import asyncio

    from questline.demo.loader import DEMO_ORG_ID, load_demo
    from questline.storage.db import Database

    settings = _with_public_url(_settings())
    _upgrade(settings)

    async def _load() -> bool:
        db = Database(settings)
        try:
            return await load_demo(db, settings)
        finally:
            await db.dispose()

    loaded = asyncio.run(_load())
    token = _tokens(settings).mint(role=Role.ADMIN, org_id=DEMO_ORG_ID, subject="demo")
    typer.echo("demo data loaded" if loaded else "demo data already present")
    typer.echo(f"organization: {DEMO_ORG_ID}")
    typer.echo(f"API docs:     {settings.public_url}/docs")
    link = asyncio.run(
        _mint_signin_link(settings, org_id=DEMO_ORG_ID, role=Role.ADMIN, subject="demo", email=None)
    )
    typer.echo(f"dashboard:    {link}")
    typer.echo("              (a one-time sign-in link, valid 15 minutes: `questline signin-link`")
    typer.echo(f"              --org {DEMO_ORG_ID}` makes another)")
    typer.echo("admin token (send as 'Authorization: Bearer <token>'):")
    typer.echo(token)


@app.command("import")
def import_teams(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The CSV file.")
    ],
    url: Annotated[
        str, typer.Option(envvar="QUESTLINE_URL", help="Base URL of the Questline API.")
    ] = "http://127.0.0.1:8000",
    token: Annotated[
        str | None,
        typer.Option(envvar="QUESTLINE_TOKEN", help="An admin token of the organization."),
    ] = None,
    batch_size: Annotated[
        int, typer.Option(min=1, help="Teams a request (at most the server's limit).")
    ] = 1000,
    dry_run: Annotated[bool, typer.Option(help="Check the file only; send nothing.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for each request.")] = 300.0,
    skip_existing: Annotated[
        bool,
        typer.Option(help="Leave alone (and report) the teams whose name exists already."),
    ] = False,
) -> None:
    """Create the teams of a CSV file: header team,email,givenName,tags; a row a member.

    Checks the whole file first: a problem on any line, and nothing is sent.

    Members are found (ignoring case) or created by e-mail; tags are separated by ';'.

    Running the same command again after a failure does not create anything twice.
    """
    from questline.cli.importer import import_file

    import_file(
        file,
        url=url,
        token=token,
        batch_size=batch_size,
        dry_run=dry_run,
        timeout=timeout,
        skip_existing=skip_existing,
    )


if __name__ == "__main__":  # `python -m questline.cli.main`, as the `questline` script
    app()

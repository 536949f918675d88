"""``questline backup PATH`` / ``questline restore PATH`` for the embedded SQLite database.

Both go through SQLite's online backup API (``sqlite3.Connection.backup``): a backup is
a consistent snapshot taken while the service keeps serving (the database is in WAL
mode: readers and the one writer go on), and a restore replaces the database's content
in one step that other connections see whole, never half-written.

A restore refuses to overwrite a *live* database — any existing database file, whether
or not a server has it open — unless ``--force``. With ``--force`` it works while a
server runs, but that server keeps caches of what it read: restart it afterwards.

PostgreSQL has its own tools (``pg_dump`` / ``pg_restore``): see docs/deploy.md.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # imported by the commands: ``questline --version`` does without it
    from questline.config import Settings

BUSY_TIMEOUT_MS = 30_000


class BackupError(Exception):
    """Said to the operator as it is; the command exits with status 1."""


def sqlite_path(settings: Settings) -> Path:
    if not settings.is_sqlite:
        raise BackupError(
            "The database is PostgreSQL: back it up with pg_dump and restore it with "
            "pg_restore (docs/deploy.md, 'Backups'). These commands are for the embedded "
            "SQLite database."
        )
    return (settings.data_dir / "questline.db").resolve()


def _connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    uri = f"file:{path}?mode=ro" if read_only else f"file:{path}"
    connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return connection


def _check_questline_database(path: Path) -> str:
    """The Alembic revision of a Questline SQLite database at ``path``, after SQLite's
    own integrity check; ``BackupError`` for anything else."""
    try:
        with closing(_connect(path, read_only=True)) as connection:
            ok = connection.execute("PRAGMA quick_check").fetchone()
            if not ok or ok[0] != "ok":
                raise BackupError(f"{path} is damaged: {ok[0] if ok else 'no answer'}")
            row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{path} is not a Questline SQLite database ({exc}).") from None
    if row is None:
        raise BackupError(f"{path} is not a Questline database (no schema revision).")
    return str(row[0])


def backup(settings: Settings, target: Path, *, force: bool = False) -> str:
    """Copy the live database to ``target``; its schema revision."""
    source = sqlite_path(settings)
    if not source.exists():
        raise BackupError(f"There is no database at {source} (QUESTLINE_DATA_DIR) to back up.")
    target = target.resolve()
    if target == source:
        raise BackupError("The backup must go to another file than the database itself.")
    if target.exists() and not force:
        raise BackupError(f"{target} exists; give --force to overwrite it.")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    with closing(_connect(source)) as src, closing(sqlite3.connect(partial)) as dst:
        src.backup(dst)  # all pages in one step: one consistent snapshot
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
    revision = _check_questline_database(partial)
    partial.replace(target)
    return revision


def restore(settings: Settings, source: Path, *, force: bool = False) -> str:
    """Replace the database's content with the backup at ``source``; its revision."""
    target = sqlite_path(settings)
    source = source.resolve()
    if not source.is_file():
        raise BackupError(f"{source} is not a file.")
    if source == target:
        raise BackupError("That is the database itself.")
    revision = _check_questline_database(source)
    if target.exists() and not force:
        raise BackupError(
            f"A database exists at {target}: restoring replaces all of its data. Give "
            "--force to do so (restart a server that serves it afterwards)."
        )
    settings.ensure_data_dir()
    with closing(_connect(source, read_only=True)) as src, closing(_connect(target)) as dst:
        src.backup(dst)  # one step, under SQLite's write lock: others see all or nothing
        dst.execute("PRAGMA journal_mode=WAL")
    return revision


def _run(step: Callable[..., str], path: Path, *, force: bool) -> str:
    """``backup`` or ``restore`` on the configured database: its schema revision, or the
    ``BackupError`` on stderr and exit status 1."""
    try:
        from questline.config import Settings

        return step(Settings(), path, force=force)
    except BackupError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None


def backup_command(
    path: Annotated[Path, typer.Argument(help="Where to write the backup (one SQLite file).")],
    force: Annotated[bool, typer.Option(help="Overwrite PATH if it exists.")] = False,
) -> None:
    """Back up the SQLite database to PATH, safely while the service is serving."""
    revision = _run(backup, path, force=force)
    typer.echo(f"backed up to {path.resolve()} (schema revision {revision})")


def restore_command(
    path: Annotated[Path, typer.Argument(help="A backup written by `questline backup`.")],
    force: Annotated[
        bool, typer.Option(help="Replace an existing database (all of its data).")
    ] = False,
) -> None:
    """Restore the SQLite database from a backup; refuses over an existing one without --force."""
    revision = _run(restore, path, force=force)
    typer.echo(
        f"restored from {path.resolve()} (schema revision {revision}); "
        "`questline serve` migrates it to the current schema on start."
    )

"""``questline import FILE.csv``: onboard a cohort from a spreadsheet, through the HTTP API.

1. Check the whole file locally with the server's own parser; report every problem with
   its line, send nothing when there is one.
2. Send it as ``POST /team/bulk`` requests of at most ``--batch-size`` teams (a team's
   rows never split), each with an ``Idempotency-Key`` made of the batch number and the
   hash of the file lines it carries: re-running the same command after a failure
   replays the batches that went through instead of creating them twice.
3. Print the created teams (tab-separated: id, name, member count) on stdout; progress
   and problems go to stderr. Exit status 1 on any problem.

``--skip-existing`` first lists the organization's teams (``GET /team``, paged) and
leaves out of the requests every team of the file whose name (ignoring case) exists;
each one is reported on stderr (``skipped: Red (exists)``). Without it, such a team is
refused by the server as a conflict (409) and nothing of its batch is created.
"""

from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from questline.bulk import csv_batches
from questline.bulk.csv_input import parse_csv
from questline.bulk.schemas import BulkPlan
from questline.teams.service import name_key
from questline.web.errors import Problem

RETRY_STATUSES = frozenset({429, 502, 503, 504})
ATTEMPTS = 5


@dataclass
class ImportReport:
    created: list[dict[str, Any]] = field(default_factory=list)
    replayed_batches: int = 0
    batches: int = 0
    skipped: list[str] = field(default_factory=list)
    """Teams of the file left alone because their name exists (``--skip-existing``)."""


TEAM_PAGE = 1000


def existing_team_names(client: httpx.Client) -> set[str]:
    """The organization's team names (by ``name_key``), following the ``Link`` pages."""
    names: set[str] = set()
    url: str | None = f"/team?limit={TEAM_PAGE}"
    while url:
        response = client.get(url)
        if response.status_code != 200:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = None
            raise ImportFailed(detail or f"listing the teams: HTTP {response.status_code}")
        names.update(name_key(team["Name"]) for team in response.json())
        url = response.links.get("next", {}).get("url")
    return names


def without_existing(plan: BulkPlan, existing: set[str]) -> tuple[BulkPlan, list[str]]:
    """The plan less the teams whose name exists; the names left out, in file order."""
    kept = [t for t in plan.teams if name_key(t.name) not in existing]
    skipped = [t.name for t in plan.teams if name_key(t.name) in existing]
    return replace(plan, teams=kept), skipped


class ImportFailed(Exception):
    """The import stopped (the problems are already printed); ``report``: what went through."""

    def __init__(self, reason: str, report: ImportReport | None = None) -> None:
        super().__init__(reason)
        self.report = report or ImportReport()


def check_file(data: bytes, console: Console) -> BulkPlan:
    """The file's plan, or ``ImportFailed`` after printing every problem with its line."""
    try:
        plan = parse_csv(data, max_teams=sys.maxsize)
    except Problem as problem:
        _print_problem(
            console, problem.detail, [(e.field, e.message) for e in problem.errors or []]
        )
        raise ImportFailed(problem.detail) from None
    if plan.errors:
        _print_problem(
            console,
            f"{plan.problem_count} problem(s) in the file (the first {len(plan.errors)} "
            "shown); nothing was sent.",
            [(e.field, e.message) for e in plan.errors],
        )
        raise ImportFailed("the file has problems")
    return plan


def batch_key(batch: csv_batches.Batch) -> str:
    """The batch's ``Idempotency-Key``: its number and the hash of the file lines it carries.

    The same batch of the same file gets the same key on every run, so a re-run replays
    it. It does not hash the whole file: after fixing a line of a later batch, the
    batches that already went through keep their keys and are replayed, not refused
    as duplicates.
    """
    digest = hashlib.sha256(batch.body).hexdigest()[:48]
    return f"questline-import-{batch.number}-{digest}"


def send(
    client: httpx.Client,
    plan: BulkPlan,
    *,
    batch_size: int,
    console: Console,
    sleep: Any = time.sleep,
) -> ImportReport:
    """Send the batches in order; stop at the first one the server refuses."""
    batches = csv_batches.split(plan, batch_size=batch_size)
    report = ImportReport(batches=len(batches))
    progress = Progress(
        TextColumn("[bold]importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("teams"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    with progress:
        task = progress.add_task("teams", total=len(plan.teams))
        for batch in batches:
            response = _post(client, batch, console=console, sleep=sleep)
            if response.status_code != 201:
                progress.stop()
                _refused(console, batch, response, report)
            if response.headers.get("Idempotent-Replayed") == "true":
                report.replayed_batches += 1
            report.created.extend(response.json())
            progress.advance(task, len(batch.team_names))
    return report


def _post(
    client: httpx.Client, batch: csv_batches.Batch, *, console: Console, sleep: Any
) -> httpx.Response:
    """One batch, retried with the same key on network errors, 429 and 502-504."""
    headers = {"Content-Type": "text/csv; charset=utf-8", "Idempotency-Key": batch_key(batch)}
    for attempt in range(1, ATTEMPTS + 1):
        response: httpx.Response | None = None
        try:
            response = client.post("/team/bulk", content=batch.body, headers=headers)
        except httpx.TransportError as exc:
            if attempt == ATTEMPTS:
                _print_problem(console, f"batch {batch.number}: {exc!r}", [])
                raise ImportFailed(str(exc)) from exc
        if response is not None and (
            response.status_code not in RETRY_STATUSES or attempt == ATTEMPTS
        ):
            return response
        sleep(_backoff(attempt, response))
    raise AssertionError("unreachable")  # pragma: no cover


def _backoff(attempt: int, response: httpx.Response | None) -> float:
    retry_after = response.headers.get("Retry-After") if response is not None else None
    if retry_after and retry_after.isdigit():
        return min(float(retry_after), 60.0)
    return float(min(2 ** (attempt - 1), 30))


def _refused(
    console: Console, batch: csv_batches.Batch, response: httpx.Response, report: ImportReport
) -> None:
    try:
        problem = response.json()
    except ValueError:
        problem = {}
    detail = problem.get("detail") or f"HTTP {response.status_code}"
    errors = [(batch.in_file_terms(e["field"]), e["message"]) for e in problem.get("errors", [])]
    _print_problem(
        console, f"batch {batch.number} refused ({response.status_code}): {detail}", errors
    )
    if response.status_code == 413:
        console.print("Lower --batch-size to the server's limit and run again.")
    if report.created:
        console.print(
            f"The {len(report.created)} teams of the earlier batches were created. Fix the "
            "problem and run the same command again: the batches that went through are "
            "replayed, not created twice (as long as their lines stay as they are)."
        )
    raise ImportFailed(detail, report)


def _print_problem(console: Console, headline: str, errors: list[tuple[str, str]]) -> None:
    console.print(f"[red]error:[/red] {headline}", highlight=False)
    for where, message in errors:
        console.print(f"  {where}: {message}", highlight=False, markup=False)


def import_file(
    file: Path,
    *,
    url: str,
    token: str | None,
    batch_size: int,
    dry_run: bool,
    timeout: float,
    skip_existing: bool,
) -> None:
    """The work of ``questline import`` (declared in ``cli.main``): check, then send."""
    console = Console(stderr=True, soft_wrap=True)
    data = file.read_bytes()
    try:
        plan = check_file(data, console)
        rows = sum(len(team.spans) for team in plan.teams)
        console.print(f"{file}: {len(plan.teams)} teams, {rows} rows, no problems found.")
        if dry_run:
            return
        if not token:
            raise typer.BadParameter("give --token (or QUESTLINE_TOKEN)", param_hint="--token")
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
        ) as client:
            skipped: list[str] = []
            if skip_existing:
                plan, skipped = without_existing(plan, existing_team_names(client))
                for name in skipped:
                    console.print(f"skipped: {name} (exists)", highlight=False, markup=False)
            report = send(client, plan, batch_size=batch_size, console=console)
            report.skipped = skipped
    except ImportFailed as failed:
        _print_created(failed.report)
        raise typer.Exit(1) from None
    _print_created(report)
    replayed = f", {report.replayed_batches} replayed from an earlier run"
    skipped_note = f"; skipped {len(report.skipped)} that exist"
    console.print(
        f"created {len(report.created)} teams in {report.batches} request(s)"
        f"{replayed if report.replayed_batches else ''}"
        f"{skipped_note if report.skipped else ''}.",
        highlight=False,
    )


def _print_created(report: ImportReport) -> None:
    for team in report.created:
        typer.echo(f"{team['Id']}\t{team['Name']}\t{team['MemberCount']}")

"""What a bulk request asks for, whichever format it came in, and what is wrong with it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from questline.members.find_many import Person
from questline.teams.schemas import Tags, TeamName
from questline.web.errors import MAX_LISTED_ERRORS, FieldError, PayloadTooLarge, Unprocessable
from questline.web.schemas import Name

CSV_COLUMNS = ("team", "email", "givenName", "tags")
CSV_HEADER = ",".join(CSV_COLUMNS)
CSV_OPTIONAL_COLUMNS = ("invite",)
"""Columns a file may add: ``invite`` (true/false) e-mails the row's member an invitation."""
TAG_SEPARATOR = ";"

GivenName = Name


class CsvRow(BaseModel):
    """One CSV row: a member of a team, or (no e-mail, no given name) just the team.

    The parser builds the input under these exact names. The e-mail address is checked
    apart (``questline.members.emails``: as ``EmailStr``, fast for thousands of rows).
    """

    model_config = ConfigDict(extra="forbid")

    team: TeamName
    email: str | None = None
    given_name: GivenName | None = Field(default=None, alias="givenName")
    tags: Tags = Field(default_factory=list)
    invite: bool = False


@dataclass(frozen=True, slots=True, order=True)
class ItemError:
    """A problem with one item; ``position`` (JSON index or CSV line) orders the report."""

    position: int
    field: str
    message: str

    def as_field_error(self) -> FieldError:
        return FieldError(field=self.field, message=self.message)


class ErrorLog(list[ItemError]):
    """Keeps the first ``keep`` problems in the order they are found, counts them all:
    a file of a million bad rows must not become a million objects and a 156 MiB answer."""

    def __init__(self, keep: int = MAX_LISTED_ERRORS) -> None:
        super().__init__()
        self.keep = keep
        self.total = 0

    def append(self, error: ItemError) -> None:
        self.total += 1
        if len(self) < self.keep:
            super().append(error)


def first_problems(*logs: list[ItemError]) -> tuple[list[ItemError], int]:
    """The first problems by position across logs (each in position order), and the total."""
    merged = sorted((e for log in logs for e in log), key=lambda e: e.position)
    total = sum(log.total if isinstance(log, ErrorLog) else len(log) for log in logs)
    return merged[:MAX_LISTED_ERRORS], total


@dataclass(frozen=True, slots=True)
class LineSpan:
    """The physical lines ``first..last`` of one CSV record (quoted newlines span more)."""

    first: int
    last: int


@dataclass(slots=True)
class PlannedTeam:
    """A team to create, with where it came from for error messages."""

    name: str
    tags: list[str]
    position: int
    """Index in the JSON array, or the CSV line of the team's first row."""
    name_field: str
    """``[3].name`` or ``line 7: team``."""
    member_ids: list[uuid.UUID] = field(default_factory=list)
    """JSON: ids of existing members, as given (``[3].members[k]`` names the k-th)."""
    people: list[Person] = field(default_factory=list)
    """CSV: members found or created by e-mail, distinct by lower-cased e-mail."""
    spans: list[LineSpan] = field(default_factory=list)
    """CSV: the records of the team's rows (the import command sends them as they are)."""
    invite: bool = False
    """JSON: ``Invite``: e-mail every member of the team an invitation."""
    invited_emails: list[str] = field(default_factory=list)
    """CSV: the addresses of the rows whose ``invite`` column is true."""

    @property
    def wants_invites(self) -> bool:
        return self.invite or bool(self.invited_emails)

    def member_field(self, index: int) -> str:
        return f"[{self.position}].members[{index}]"


@dataclass(slots=True)
class BulkPlan:
    """A parsed request: the teams to create and every problem found without a database."""

    teams: list[PlannedTeam]
    errors: list[ItemError]
    """The first problems (at most ``MAX_LISTED_ERRORS``), in position order."""
    error_total: int = -1
    """How many problems there are in all (``-1``: as many as listed)."""
    text: str = ""
    """CSV: the decoded file (the import command cuts its batches from it)."""
    header: LineSpan | None = None
    """CSV: the lines of the header record."""

    @property
    def wants_invites(self) -> bool:
        return any(team.wants_invites for team in self.teams)

    @property
    def problem_count(self) -> int:
        return len(self.errors) if self.error_total < 0 else self.error_total


def check_team_count(count: int, *, max_teams: int) -> None:
    """413 past the configured number of teams a request (``QUESTLINE_MAX_BULK_TEAMS``)."""
    if count > max_teams:
        raise PayloadTooLarge(
            f"At most {max_teams} teams a request; this one has {count}. "
            "Split it into several requests."
        )


def nothing_to_create() -> Unprocessable:
    return Unprocessable(
        "The request holds no team; send at least one.",
        errors=[FieldError(field="body", message="Send at least one team.")],
    )

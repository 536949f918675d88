"""A CSV bulk request: header ``team,email,givenName,tags`` (and optionally ``invite``),
one row a member.

Read the way spreadsheets write it: an optional UTF-8 byte order mark, CRLF, LF or CR
line ends, quoted fields holding commas, quotes or newlines, any script. Header names
ignore case and order. Rows of one team (names ignore case; the first spelling wins)
make one team whose tags are the union of its rows' tags (``;`` between tags). A row
with neither e-mail nor given name only declares its team. Blank rows are skipped.

Problems are named by the physical line where the record starts (``line 7: email``):
the line an editor shows, and a spreadsheet's row number when no cell holds a newline.
The import command uses this same parser to check a file before sending it.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from pydantic import TypeAdapter, ValidationError

from questline.bulk.schemas import (
    CSV_COLUMNS,
    CSV_HEADER,
    CSV_OPTIONAL_COLUMNS,
    TAG_SEPARATOR,
    BulkPlan,
    CsvRow,
    ErrorLog,
    ItemError,
    LineSpan,
    PlannedTeam,
    check_team_count,
    first_problems,
    nothing_to_create,
)
from questline.members.emails import normalize_email
from questline.members.find_many import Person
from questline.members.service import email_key
from questline.teams.schemas import MAX_MEMBERS_ON_CREATE, MAX_TAGS
from questline.teams.service import name_key
from questline.web.errors import FieldError, Unprocessable, field_errors

_ROW = TypeAdapter(CsvRow)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class Record:
    span: LineSpan
    values: dict[str, str]
    """By column name (``team``, ``email``, ``givenName``, ``tags``)."""


def decode(body: bytes) -> str:
    """The text of a UTF-8 file (a byte order mark is dropped); 422 naming the bad line."""
    nul = body.find(b"\0")
    if nul >= 0:
        raise Unprocessable(
            "The file holds NUL characters: it is not a CSV text file.",
            errors=[FieldError(field=f"line {_line_at(body, nul)}", message="NUL character.")],
        )
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = _line_at(body, exc.start)
        raise Unprocessable(
            "The file is not valid UTF-8; save it as UTF-8 (in Excel: 'CSV UTF-8').",
            errors=[
                FieldError(
                    field=f"line {line}",
                    message=f"Byte 0x{body[exc.start]:02x} is not valid UTF-8.",
                )
            ],
        ) from None


def _line_at(body: bytes, offset: int) -> int:
    before = body[:offset].decode("utf-8", errors="replace")
    return len(_LINE_BREAK.findall(before)) + 1


def parse_csv(body: bytes, *, max_teams: int) -> BulkPlan:
    text = decode(body)
    header, records, errors = read_records(text)
    if not records and not errors:
        raise nothing_to_create()
    check_team_count(
        len({name_key(r.values["team"].strip()) for r in records if r.values["team"].strip()}),
        max_teams=max_teams,
    )
    builder = _TeamBuilder()
    for record in records:
        builder.add(record)
    listed, total = first_problems(errors, builder.errors)
    return BulkPlan(
        teams=list(builder.teams.values()),
        errors=listed,
        error_total=total,
        text=text,
        header=header,
    )


def read_records(text: str) -> tuple[LineSpan, list[Record], list[ItemError]]:
    """The header's lines, the data rows after it (blank rows left out), bad rows."""
    header: LineSpan | None = None
    columns: dict[str, int] = {}
    records: list[Record] = []
    errors = ErrorLog()
    for span, cells in _physical_records(text):
        if not any(cell.strip() for cell in cells):
            continue
        if header is None:
            header, columns = span, _header_columns(span, cells)
            continue
        if any(cell.strip() for cell in cells[len(columns) :]):
            message = (
                f"The row has {len(cells)} fields; the header has {len(columns)}. "
                "Quote fields that hold commas."
            )
            errors.append(ItemError(span.first, f"line {span.first}", message))
            continue
        values = {name: cells[i] if i < len(cells) else "" for name, i in columns.items()}
        records.append(Record(span, values))
    if header is None:
        raise Unprocessable(
            f"The file is empty; its first line must be the header {CSV_HEADER}.",
            errors=[FieldError(field="line 1: header", message=f"Expected {CSV_HEADER}.")],
        )
    return header, records, errors


def _physical_records(text: str) -> Iterator[tuple[LineSpan, list[str]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    last = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise Unprocessable(
                "The file is not valid CSV.",
                errors=[FieldError(field=f"line {last + 1}", message=f"Not valid CSV: {exc}.")],
            ) from None
        yield LineSpan(last + 1, reader.line_num), cells
        last = reader.line_num


_HEADER_NOISE = re.compile(r"[\s_\-]+")


def header_key(cell: str) -> str:
    """A header cell as matched: case, spaces, underscores and hyphens ignored, so
    ``Given Name``, ``given_name`` and ``givenName`` all name ``givenName``."""
    return _HEADER_NOISE.sub("", cell).casefold()


def _header_columns(span: LineSpan, cells: list[str]) -> dict[str, int]:
    canonical = {header_key(name): name for name in (*CSV_COLUMNS, *CSV_OPTIONAL_COLUMNS)}
    given = [header_key(cell) for cell in cells]
    required = {header_key(name) for name in CSV_COLUMNS}
    if len(set(given)) != len(given) or not required <= set(given) <= set(canonical):
        hint = " Separate the fields with commas, not semicolons." if ";" in cells[0] else ""
        raise Unprocessable(
            f"The first line must be the header {CSV_HEADER}.",
            errors=[
                FieldError(
                    field=f"line {span.first}: header",
                    message=f"Expected {CSV_HEADER} (any case, spacing and order; "
                    f"optionally {','.join(CSV_OPTIONAL_COLUMNS)}); "
                    f"got {','.join(cells)}.{hint}",
                )
            ],
        )
    return {canonical[name]: index for index, name in enumerate(given)}


def _row_input(values: dict[str, str]) -> dict[str, object]:
    tags = [tag.strip() for tag in values["tags"].split(TAG_SEPARATOR)]
    return {
        "team": values["team"],
        "email": values["email"].strip() or None,
        "givenName": values["givenName"].strip() or None,
        "tags": [tag for tag in tags if tag],
        "invite": values.get("invite", "").strip() or False,
    }


@dataclass
class _TeamBuilder:
    """Folds valid rows into teams, collecting every problem with its line."""

    teams: dict[str, PlannedTeam] = field(default_factory=dict)
    errors: ErrorLog = field(default_factory=ErrorLog)
    _emails: dict[str, set[str]] = field(default_factory=dict)
    _tags: dict[str, set[str]] = field(default_factory=dict)
    _flagged: set[tuple[str, str]] = field(default_factory=set)
    _people: dict[str, Person] = field(default_factory=dict)
    """Every address once (its first row's given name), shared by all its teams."""

    def error(self, line: int, column: str, message: str) -> None:
        self.errors.append(ItemError(line, f"line {line}: {column}", message))

    def add(self, record: Record) -> None:
        line = record.span.first
        known_problems = self.errors.total
        row = self._row(record, line)
        email = self._email(record.values["email"].strip(), line)
        if row is None or self.errors.total > known_problems:
            return
        if row.email is not None and row.given_name is None:
            self.error(line, "givenName", "Give the member's given name with the e-mail.")
            return
        if row.email is None and row.given_name is not None:
            self.error(line, "email", "Give the member's e-mail address with the given name.")
            return
        key = name_key(row.team)
        team = self.teams.get(key)
        if team is None:
            team = PlannedTeam(
                name=row.team, tags=[], position=line, name_field=f"line {line}: team"
            )
            self.teams[key] = team
            self._emails[key], self._tags[key] = set(), set()
        if row.invite and email is None:
            self.error(line, "invite", "Give the member's e-mail address to invite it.")
            return
        team.spans.append(record.span)
        self._add_tags(key, team, row.tags, line)
        if email is not None and row.given_name is not None:
            self._add_member(key, team, Person(email, row.given_name), line)
            if row.invite:
                team.invited_emails.append(email)

    def _row(self, record: Record, line: int) -> CsvRow | None:
        try:
            return _ROW.validate_python(_row_input(record.values))
        except ValidationError as exc:
            for problem in field_errors(exc.errors()):
                self.error(line, problem.field, problem.message)
            return None

    def _email(self, raw: str, line: int) -> str | None:
        if not raw:
            return None
        try:
            return normalize_email(raw)
        except ValidationError as exc:
            for detail in exc.errors():
                self.error(line, "email", str(detail["msg"]))
            return None

    def _add_tags(self, key: str, team: PlannedTeam, tags: list[str], line: int) -> None:
        known = self._tags[key]
        for tag in tags:
            if tag.casefold() in known:
                continue
            if len(team.tags) == MAX_TAGS:
                self._once(key, "tags", line, f"A team has at most {MAX_TAGS} tags.")
                return
            known.add(tag.casefold())
            team.tags.append(tag)

    def _add_member(self, key: str, team: PlannedTeam, person: Person, line: int) -> None:
        known = self._emails[key]
        member_key = email_key(person.email)
        if member_key in known:
            return
        if len(team.people) == MAX_MEMBERS_ON_CREATE:
            message = f"A team has at most {MAX_MEMBERS_ON_CREATE} members on creation."
            self._once(key, "email", line, message)
            return
        known.add(member_key)
        team.people.append(self._people.setdefault(member_key, person))

    def _once(self, key: str, column: str, line: int, message: str) -> None:
        if (key, column) not in self._flagged:
            self._flagged.add((key, column))
            self.error(line, column, f"{message} (team {self.teams[key].name!r})")

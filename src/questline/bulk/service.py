"""Bulk team creation: check everything, then write everything, set-based.

All or nothing: the checks that need the database (names already taken, unknown
member ids) run before any write, one query a chunk; any problem, together with the
problems found while parsing, is one 422 listing them all, and nothing is written.
The writes are a handful of multi-row statements in the request's one transaction,
so a crash or a failing statement leaves no team behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import orjson
from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit, events
from questline.bulk.schemas import BulkPlan, ItemError, PlannedTeam
from questline.mail import service as mail_service
from questline.members import find_many
from questline.members.service import email_key
from questline.readmodel.versions import bump
from questline.teams import create_many
from questline.teams.service import TEAMS_CREATED, name_key
from questline.web.errors import MAX_LISTED_ERRORS, Conflict, Unprocessable
from questline.web.metrics import count_on_commit

BULK_ROWS_IMPORTED = Counter(
    "questline_bulk_rows_imported",
    "Rows of successful POST /team/bulk requests: CSV records, or JSON team items",
    ["format"],
)
_CSV_ROWS = BULK_ROWS_IMPORTED.labels("csv")
_JSON_ROWS = BULK_ROWS_IMPORTED.labels("json")


async def create_teams(session: AsyncSession, *, org_id: uuid.UUID, plan: BulkPlan) -> bytes:
    """Create every team of the plan, or raise 422 naming every problem and write nothing.

    Returns the created teams as the API writes them (a JSON array of ``Team``). The
    statements are as many whatever the number of teams: two checks, the member
    find-or-create (CSV), two writes (``COPY`` on PostgreSQL), the audit log's entries
    (one ``team.created`` a team, in one more ``COPY``), one outbox row for the whole
    bulk (``bulk.completed``: webhooks get one event, not one a team) and one version
    bump.
    """
    taken = await _taken_names(session, org_id=org_id, teams=plan.teams)
    unknown = await _unknown_members(session, org_id=org_id, teams=plan.teams)
    if taken and not unknown and plan.problem_count == 0:
        # The request is fine in itself; it conflicts with the organization's state.
        noun = "name is" if len(taken) == 1 else "names are"
        raise Conflict(
            f"{len(taken)} team {noun} already used in your organization; nothing was created.",
            errors=[e.as_field_error() for e in sorted(taken, key=lambda e: e.position)],
        )
    errors = [*plan.errors, *taken, *unknown]
    if errors:
        raise _report(errors, unlisted=plan.problem_count - len(plan.errors))
    ids_by_email = await find_many.find_or_create_many(
        session, org_id=org_id, people=[p for team in plan.teams for p in team.people]
    )
    new_teams = [
        create_many.NewTeam(
            name=team.name,
            tags=team.tags,
            member_ids=_member_ids(team, ids_by_email),
        )
        for team in plan.teams
    ]
    created = await create_many.insert_teams(session, org_id=org_id, teams=new_teams)
    if plan.wants_invites:
        await mail_service.queue_invites(
            session, org_id=org_id, member_ids=_invited(plan.teams, new_teams, ids_by_email)
        )
    await audit.record_many(
        session,
        organization_id=org_id,
        changes=[
            audit.service.Change(
                "team.created",
                ("team", team["Id"]),
                after={"Name": team["Name"], "Tags": team["Tags"], "Members": new.member_ids},
            )
            for team, new in zip(created, new_teams, strict=True)
        ],
    )
    # One outbox row for the whole bulk, whose payload is the answer's own JSON: dumped
    # once, and taken verbatim by the JSON column (an ``orjson.Fragment``).
    content = orjson.dumps(created)
    await events.record(
        session, organization_id=org_id, type="bulk.completed", data=orjson.Fragment(content)
    )
    count_on_commit(session, TEAMS_CREATED, len(created))
    if plan.header is not None:  # CSV: its records
        count_on_commit(session, _CSV_ROWS, sum(len(team.spans) for team in plan.teams))
    else:  # JSON: its items
        count_on_commit(session, _JSON_ROWS, len(plan.teams))
    await bump(session, org_id)
    return content


def _member_ids(team: PlannedTeam, ids_by_email: dict[str, uuid.UUID]) -> list[uuid.UUID]:
    """The team's distinct members: those named by id, then those found by e-mail."""
    if not team.people:  # JSON items (most imports): ids only
        return list(dict.fromkeys(team.member_ids)) if team.member_ids else []
    found = (ids_by_email[email_key(person.email)] for person in team.people)
    return list(dict.fromkeys([*team.member_ids, *found]))


def _invited(
    planned: Sequence[PlannedTeam],
    created: Sequence[create_many.NewTeam],
    ids_by_email: dict[str, uuid.UUID],
) -> list[uuid.UUID]:
    """The members to invite: every member of a JSON team with ``Invite``, and the
    members of the CSV rows whose ``invite`` is true."""
    invited: list[uuid.UUID] = []
    for plan, team in zip(planned, created, strict=True):
        if plan.invite:
            invited.extend(team.member_ids)
        invited.extend(ids_by_email[email_key(email)] for email in plan.invited_emails)
    return invited


async def _taken_names(
    session: AsyncSession, *, org_id: uuid.UUID, teams: Sequence[PlannedTeam]
) -> list[ItemError]:
    taken = await create_many.existing_name_keys(
        session, org_id=org_id, keys={name_key(t.name) for t in teams}
    )
    return [
        ItemError(
            team.position,
            team.name_field,
            f"A team named {team.name!r} already exists in your organization (names ignore case).",
        )
        for team in teams
        if name_key(team.name) in taken
    ]


async def _unknown_members(
    session: AsyncSession, *, org_id: uuid.UUID, teams: Sequence[PlannedTeam]
) -> list[ItemError]:
    wanted = {member_id for team in teams for member_id in team.member_ids}
    if not wanted:
        return []
    known = await find_many.existing_member_ids(session, org_id=org_id, member_ids=wanted)
    errors = []
    for team in teams:
        reported: set[uuid.UUID] = set()
        for index, member_id in enumerate(team.member_ids):
            if member_id not in known and member_id not in reported:
                reported.add(member_id)
                errors.append(
                    ItemError(
                        team.position,
                        team.member_field(index),
                        f"Unknown member {member_id}: no member of your organization has this id.",
                    )
                )
    return errors


def _report(errors: list[ItemError], *, unlisted: int = 0) -> Unprocessable:
    """422 listing the first problems by position, with the total count."""
    errors.sort(key=lambda e: e.position)
    total = len(errors) + unlisted
    noun = "problem" if total == 1 else "problems"
    listed = errors[:MAX_LISTED_ERRORS]
    shown = "" if total == len(listed) else f" (the first {len(listed)} are listed)"
    problem = Unprocessable(
        f"{total} {noun} in the request{shown}; nothing was created.",
        errors=[e.as_field_error() for e in listed],
    )
    problem.error_count = total if shown else None
    return problem

"""The SCIM rules: a directory's users and groups written as members and teams.

The members' and teams' own rules apply (``members.service``, ``teams.service``): e-mail
and given-name checks, unique team names, archived teams refusing members, the outbox
events of every membership change, the read model's version. What is SCIM's own is here:
``userName``/``externalId``/``active``, deactivation, PATCH, filters and paging.

Every change is in the audit log, in its transaction, with the actor's ``via`` ``scim``
(the directory's token): ``member.created``, ``member.updated``, ``member.deactivated``,
``member.reactivated``, ``member.deleted`` for users; the teams' own ``team.created``,
``team.renamed``, ``team.updated`` (``externalId``, or a write that changed nothing),
``team.deleted`` and ``member.added``/``member.removed`` for groups and their members.

Deactivating a user (``active: false``) or deleting it takes the member out of every
team (``member.removed`` events; the teams keep their progress and score history) and
ends its dashboard sessions and unspent sign-in codes; a deactivated member cannot sign
in (``auth.sessions.refuse_deactivated``) until the directory activates it again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError
from scim2_models import (
    Context,
    Email,
    Error,
    Group,
    InvalidValueException,
    NotFoundException,
    PatchOp,
    PreconditionFailedException,
    Resource,
    SCIMException,
    UniquenessException,
    User,
)
from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit
from questline.auth import sessions
from questline.members.models import Member, TeamMembership, membership_of_member
from questline.members.service import email_key, team_ids_of
from questline.readmodel.versions import bump
from questline.scim import filters, resources
from questline.storage.db import new_id, utcnow
from questline.teams import service as teams_service
from questline.teams.models import Team
from questline.teams.schemas import MemberAdd, TeamCreate, TeamUpdate

M = TypeVar("M", bound=Resource[Any])
R = TypeVar("R")

MAX_EXTERNAL_ID = 255
MAX_USER_NAME = 320


@dataclass(frozen=True, slots=True)
class Page:
    start_index: int
    count: int


# Requests ----------------------------------------------------------------------------


def parse_resource(model: type[M], payload: Any, context: Context) -> M:
    """The request body as ``model``, or the SCIM error its first problem is."""
    if not isinstance(payload, dict):
        raise InvalidValueException(detail="The body must be a JSON object.")
    try:
        return model.model_validate(payload, scim_ctx=context)
    except ValidationError as exc:
        raise _scim_error(exc) from None


def parse_patch(model: type[M], payload: Any) -> PatchOp[Any]:
    if not isinstance(payload, dict):
        raise InvalidValueException(detail="The body must be a JSON object.")
    try:
        return PatchOp[model].model_validate(  # type: ignore[valid-type]
            payload, scim_ctx=Context.RESOURCE_PATCH_REQUEST
        )
    except ValidationError as exc:
        raise _scim_error(exc) from None


def _scim_error(exc: ValidationError) -> SCIMException:
    errors = Error.from_validation_errors(exc)
    first = errors[0] if errors else Error(status=400, scim_type="invalidValue", detail=str(exc))
    return SCIMException.from_error(first)


def apply_patch(patch: PatchOp[Any], resource: M) -> M:
    """``resource`` with the operations applied (``scim2_models`` does the SCIM part:
    paths, value filters such as ``members[value eq "…"]``, add/remove/replace)."""
    try:
        patch.patch(resource)
    except ValidationError as exc:
        raise _scim_error(exc) from None
    except (ValueError, TypeError) as exc:
        raise InvalidValueException(detail=f"The patch cannot be applied: {exc}") from None
    return resource


def check_if_match(current_version: str, if_match: str | None) -> None:
    """412 when ``If-Match`` names none of the resource's current version (weak tags
    compared by their value: SCIM versions are weak)."""
    if if_match is None:
        return
    wanted = {tag.strip().removeprefix("W/") for tag in if_match.split(",")}
    if "*" in wanted or current_version.removeprefix("W/") in wanted:
        return
    raise PreconditionFailedException(
        detail="The resource changed since you read it (If-Match does not match its "
        "version); read it again and retry."
    )


def _invalid(exc: ValidationError, what: str) -> InvalidValueException:
    first = exc.errors()[0] if exc.errors() else {"msg": "invalid"}
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    return InvalidValueException(detail=f"{what}: {message}.")


def _checked_text(value: str | None, limit: int, what: str) -> str | None:
    if value is None:
        return None
    if len(value) > limit or "\x00" in value:
        raise InvalidValueException(detail=f"{what} is longer than {limit} characters.")
    return value


# Users -------------------------------------------------------------------------------


async def _one_or_not_found(
    session: AsyncSession, query: Select[R] | None, kind: str, given_id: str, for_update: bool
) -> R:
    """The resource ``query`` selects, or SCIM's 404 naming the id as given (cut short:
    it is the client's text); ``query`` is None when the id is not one of ours."""
    if query is not None and for_update:
        query = query.with_for_update()
    found = await session.scalar(query) if query is not None else None
    if found is None:
        raise NotFoundException(detail=f"No {kind} {given_id[:64]!r} in your organization.")
    return found


async def get_member(
    session: AsyncSession, *, org_id: uuid.UUID, user_id: str, for_update: bool = False
) -> Member:
    member_id = _uuid(user_id)
    query = select(Member).where(Member.organization_id == org_id, Member.id == member_id)
    return await _one_or_not_found(
        session, query if member_id is not None else None, "user", user_id, for_update
    )


async def user_of(session: AsyncSession, member: Member, base_url: str) -> User[Any]:
    teams = await team_ids_of(session, org_id=member.organization_id, member_ids=[member.id])
    return resources.to_user(member, teams.get(member.id, []), base_url)


async def list_users(
    session: AsyncSession, *, org_id: uuid.UUID, filter: str | None, page: Page, base_url: str
) -> tuple[int, list[User[Any]]]:
    condition = filters.user_condition(filter)
    where = (Member.organization_id == org_id, condition)
    total = await session.scalar(select(func.count()).select_from(Member).where(*where))
    rows = list(
        await session.scalars(
            select(Member)
            .where(*where)
            .order_by(Member.id)
            .offset(page.start_index - 1)
            .limit(page.count)
        )
    )
    teams = await team_ids_of(session, org_id=org_id, member_ids=[m.id for m in rows])
    return int(total or 0), [resources.to_user(m, teams.get(m.id, []), base_url) for m in rows]


@dataclass(frozen=True, slots=True)
class UserFields:
    email: str
    user_name: str | None
    given_name: str
    active: bool | None
    external_id: str | None
    emails: list[dict[str, Any]] | None
    """The e-mail entries as kept (``Member.directory_emails``)."""


MAX_EMAILS = 20
MAX_EMAIL_TYPE = 64


def _login_entry(emails: Sequence[Email], previous: str | None = None) -> int | None:
    """Which entry is the member's e-mail: the primary one, else the first. When
    several say ``primary`` (a PATCH marked another one), one other than the
    ``previous`` e-mail wins: a new primary value unsets the others (RFC 7644 §3.5.2)."""
    if not emails:
        return None
    marked = [i for i, e in enumerate(emails) if e.primary]
    if not marked:
        return 0
    if len(marked) > 1 and previous is not None:
        newer = [i for i in marked if str(emails[i].value).casefold() != previous.casefold()]
        if newer:
            return newer[0]
    return marked[0]


def user_fields(user: User[Any], previous: str | None = None) -> UserFields:
    """What a SCIM User sets on a member, checked by the members' own rules
    (``previous``: the member's e-mail before a write, see ``_login_entry``)."""
    user_name = _checked_text(user.user_name, MAX_USER_NAME, "userName")
    if not user_name or not user_name.strip():
        raise InvalidValueException(detail="userName is required.")
    emails = [e for e in user.emails or [] if e.value]
    if len(emails) > MAX_EMAILS:
        raise InvalidValueException(detail=f"emails holds more than {MAX_EMAILS} entries.")
    login = _login_entry(emails, previous)
    primary = emails[login] if login is not None else None
    email = primary.value if primary is not None and primary.value else user_name
    given = (
        (user.name.given_name if user.name else None)
        or user.display_name
        or (user.name.formatted if user.name else None)
        or email.split("@", 1)[0]
    )
    try:
        checked = MemberAdd.model_validate({"email": email.strip(), "givenName": given[:100]})
    except ValidationError as exc:
        field = "emails" if primary is not None else "userName"
        raise _invalid(exc, f"{field} must be an e-mail address and name a person") from None
    email = str(checked.email)
    return UserFields(
        email=email,
        user_name=None if user_name == email else user_name,
        given_name=checked.given_name,
        active=user.active,
        external_id=_checked_text(user.external_id, MAX_EXTERNAL_ID, "externalId"),
        emails=_kept_emails(emails, login, email),
    )


def _kept_emails(emails: Sequence[Email], login: int | None, email: str) -> list[dict[str, Any]]:
    """The entries as stored: ``value`` (the member's e-mail as the members' rules
    normalized it for the login entry), ``type`` and ``primary`` as sent, at most one
    entry primary."""
    kept: list[dict[str, Any]] = []
    for i, entry in enumerate(emails):
        item: dict[str, Any] = {"value": email if i == login else str(entry.value)}
        if entry.type is not None:
            kind = str(entry.type.value if hasattr(entry.type, "value") else entry.type)
            item["type"] = _checked_text(kind, MAX_EMAIL_TYPE, "emails.type")
        if entry.primary is not None:
            item["primary"] = bool(entry.primary) and i == login
        kept.append(item)
    return kept


def _user_name_is(name: str) -> ColumnElement[bool]:
    return func.lower(func.coalesce(Member.user_name, Member.email)) == name.lower()


async def _ensure_unique(
    session: AsyncSession, *, org_id: uuid.UUID, fields: UserFields, except_id: uuid.UUID | None
) -> None:
    for condition, what in (
        (Member.email_key == email_key(fields.email), "e-mail address"),
        (_user_name_is(fields.user_name or fields.email), "userName"),
    ):
        query = select(Member.id).where(Member.organization_id == org_id, condition)
        if except_id is not None:
            query = query.where(Member.id != except_id)
        if await session.scalar(query.limit(1)) is not None:
            raise UniquenessException(detail=f"Another user of your organization has this {what}.")


async def create_user(session: AsyncSession, *, org_id: uuid.UUID, user: User[Any]) -> Member:
    fields = user_fields(user)
    await _ensure_unique(session, org_id=org_id, fields=fields, except_id=None)
    now = utcnow()
    member = Member(
        organization_id=org_id,
        id=new_id(),
        email=fields.email,
        email_key=email_key(fields.email),
        user_name=fields.user_name,
        given_name=fields.given_name,
        active=fields.active,
        external_id=fields.external_id,
        directory_emails=fields.emails or None,
        created_at=now,
        updated_at=now,
    )
    session.add(member)
    await session.flush()
    await audit.record_on(session, "member", member, "member.created", after=audited(member))
    await bump(session, org_id)
    return member


def audited(member: Member) -> dict[str, object]:
    """The fields of a member the audit log compares before and after a SCIM write."""
    return {
        "Email": member.email,
        "Emails": resources.emails_of(member),
        "UserName": member.user_name or member.email,
        "GivenName": member.given_name,
        "ExternalId": member.external_id,
        "Active": member.active is not False,
    }


async def _audit_member_write(
    session: AsyncSession, member: Member, before: dict[str, object], after: dict[str, object]
) -> None:
    """PUT and PATCH: ``member.deactivated`` or ``member.reactivated`` when ``active``
    changed (so that ``action=`` finds each), ``member.updated`` for the other fields,
    and one ``member.updated`` for a write that changed nothing (it was still made)."""
    if before["Active"] != after["Active"]:
        action = "member.reactivated" if after["Active"] else "member.deactivated"
        await audit.record_on(
            session,
            "member",
            member,
            action,
            before={"Active": before["Active"]},
            after={"Active": after["Active"]},
        )
    others = [f for f in before if f != "Active" and before[f] != after[f]]
    if others:
        await audit.record_on(
            session,
            "member",
            member,
            "member.updated",
            before={f: before[f] for f in others},
            after={f: after[f] for f in others},
        )
    elif before == after:
        await audit.record_on(
            session, "member", member, "member.updated", before=before, after=after
        )


async def write_user(session: AsyncSession, *, member: Member, user: User[Any]) -> Member:
    """PUT and PATCH: the member becomes what ``user`` says (deactivation included)."""
    fields = user_fields(user, member.email)
    await _ensure_unique(session, org_id=member.organization_id, fields=fields, except_id=member.id)
    before = audited(member)
    was_active = member.active is not False
    previous_email = member.email
    member.email = fields.email
    member.email_key = email_key(fields.email)
    member.user_name = fields.user_name
    member.given_name = fields.given_name
    member.external_id = fields.external_id
    member.directory_emails = fields.emails or None
    member.active = fields.active
    member.updated_at = utcnow()
    await session.flush()
    if was_active and fields.active is False:
        await _take_out(session, member, previous_email)
    elif previous_email.casefold() != fields.email.casefold():
        # Sessions are bound to the address they signed in with.
        await sessions.end_sessions_of(session, org_id=member.organization_id, email=previous_email)
    await _audit_member_write(session, member, before, audited(member))
    await bump(session, member.organization_id)
    return member


async def _take_out(session: AsyncSession, member: Member, email: str) -> None:
    """Out of every team (their progress stays) and out of the dashboard."""
    await teams_service.remove_from_all_teams(
        session, org_id=member.organization_id, member_id=member.id
    )
    await sessions.end_sessions_of(session, org_id=member.organization_id, email=email)
    if email != member.email:
        await sessions.end_sessions_of(session, org_id=member.organization_id, email=member.email)


async def delete_user(session: AsyncSession, *, member: Member) -> None:
    await _take_out(session, member, member.email)
    await audit.record_on(session, "member", member, "member.deleted", before=audited(member))
    await session.delete(member)
    await session.flush()
    await bump(session, member.organization_id)


def patch_target(user: User[Any], patch: PatchOp[Any]) -> User[Any]:
    """The user a PATCH applies to. When the patch addresses ``emails[type eq …]``
    (Entra ID's ``emails[type eq "work"].value``) and no entry has a type (a user
    created without types), the member's e-mail is typed ``work`` so that the path
    finds it; otherwise the entries are as kept."""
    entries = user.emails or []
    by_type = any(
        "emails[" in (operation.path or "").lower().replace(" ", "")
        and "type" in (operation.path or "").lower()
        for operation in patch.operations or []
    )
    if by_type and entries and all(e.type is None for e in entries):
        login = _login_entry(entries)
        entries[login or 0].type = Email.Type.work
    return user


# Groups ------------------------------------------------------------------------------


async def get_team(
    session: AsyncSession, *, org_id: uuid.UUID, group_id: str, for_update: bool = False
) -> Team:
    team_id = _uuid(group_id)
    query = select(Team).where(Team.organization_id == org_id, Team.id == team_id)
    return await _one_or_not_found(
        session, query if team_id is not None else None, "group", group_id, for_update
    )


async def members_of(
    session: AsyncSession, *, org_id: uuid.UUID, team_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[tuple[uuid.UUID, str]]]:
    """Each team's members (id and e-mail), by e-mail, in one query."""
    found: dict[uuid.UUID, list[tuple[uuid.UUID, str]]] = {t: [] for t in team_ids}
    if not team_ids:
        return found
    rows = await session.execute(
        select(TeamMembership.team_id, Member.id, Member.email)
        .join(Member, membership_of_member())
        .where(TeamMembership.organization_id == org_id, TeamMembership.team_id.in_(team_ids))
        .order_by(TeamMembership.team_id, Member.email_key)
    )
    for team_id, member_id, email in rows:
        found[team_id].append((member_id, email))
    return found


async def group_of(session: AsyncSession, team: Team, base_url: str) -> Group:
    members = await members_of(session, org_id=team.organization_id, team_ids=[team.id])
    return resources.to_group(team, members[team.id], base_url)


async def list_groups(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    filter: str | None,
    page: Page,
    base_url: str,
    with_members: bool,
) -> tuple[int, list[Group]]:
    condition = filters.group_condition(filter)
    where = (Team.organization_id == org_id, condition)
    total = await session.scalar(select(func.count()).select_from(Team).where(*where))
    rows = list(
        await session.scalars(
            select(Team)
            .where(*where)
            .order_by(Team.id)
            .offset(page.start_index - 1)
            .limit(page.count)
        )
    )
    members = (
        await members_of(session, org_id=org_id, team_ids=[t.id for t in rows])
        if with_members
        else {}
    )
    return int(total or 0), [resources.to_group(t, members.get(t.id, []), base_url) for t in rows]


def _team_name(group: Group) -> str:
    try:
        return TeamCreate.model_validate({"name": group.display_name or ""}).name
    except ValidationError as exc:
        raise _invalid(exc, "displayName must name a team") from None


async def _wanted_members(
    session: AsyncSession, *, org_id: uuid.UUID, group: Group
) -> list[uuid.UUID]:
    """The active members the group lists (deactivated ones are left out: they are in
    no team until activated again); an id that names no user is refused."""
    values = [m.value for m in group.members or [] if m.value is not None]
    ids = [_uuid(v) for v in values]
    unknown = [v for v, i in zip(values, ids, strict=True) if i is None]
    wanted = list(dict.fromkeys(i for i in ids if i is not None))
    known: dict[uuid.UUID, bool | None] = {}
    if wanted:
        rows = await session.execute(
            select(Member.id, Member.active).where(
                Member.organization_id == org_id, Member.id.in_(wanted)
            )
        )
        for member_id, active in rows.all():
            known[member_id] = active
    unknown += [str(i) for i in wanted if i not in known]
    if unknown:
        raise InvalidValueException(
            detail=f"members name no user of your organization: {', '.join(unknown[:5])}."
        )
    return [i for i in wanted if known[i] is not False]


async def create_group(session: AsyncSession, *, org_id: uuid.UUID, group: Group) -> Team:
    name = _team_name(group)
    external_id = _checked_text(group.external_id, MAX_EXTERNAL_ID, "externalId")
    wanted = await _wanted_members(session, org_id=org_id, group=group)
    created = await teams_service.create_team(
        session,
        org_id=org_id,
        data=TeamCreate.model_validate({"name": name}),
        external_id=external_id,
    )
    team = created.team
    if wanted:
        await teams_service.add_members_by_id(session, team=team, member_ids=wanted)
    return team


async def write_group(session: AsyncSession, *, team: Team, group: Group) -> Team:
    """PUT and PATCH: the team takes the group's name, directory id and members."""
    name = _team_name(group)
    external_id = _checked_text(group.external_id, MAX_EXTERNAL_ID, "externalId")
    wanted = await _wanted_members(session, org_id=team.organization_id, group=group)
    renamed = name != team.name
    if renamed:
        await teams_service.update_team(
            session, team=team, data=TeamUpdate.model_validate({"Name": name}), if_match=None
        )
    current = [
        member_id
        for member_id, _ in (
            await members_of(session, org_id=team.organization_id, team_ids=[team.id])
        )[team.id]
    ]
    leaving = [m for m in current if m not in set(wanted)]
    joining = [m for m in wanted if m not in set(current)]
    for member_id in leaving:
        await teams_service.remove_member(session, team=team, member_id=member_id)
    if joining:
        await teams_service.add_members_by_id(session, team=team, member_ids=joining)
    # A rename and each member who came or went have their entries already (the teams'
    # rules write them); the directory's id, or a write that changed nothing, have this.
    if external_id != team.external_id:
        await teams_service.audit_team(
            session,
            team,
            "team.updated",
            {"ExternalId": team.external_id},
            {"ExternalId": external_id},
        )
    elif not (renamed or leaving or joining):
        same: dict[str, object] = {
            "Name": team.name,
            "ExternalId": team.external_id,
            "Members": current,
        }
        await teams_service.audit_team(session, team, "team.updated", same, same)
    team.external_id = external_id
    team.updated_at = utcnow()
    await session.flush()
    return team


async def delete_group(session: AsyncSession, *, team: Team) -> None:
    await teams_service.delete_team(session, team=team)


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None

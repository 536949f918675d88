"""Members and teams as SCIM resources, and what the service publishes about them.

``User`` ↔ member: ``userName`` is the member's e-mail address (or, when a directory
sends a ``userName`` that is not one, that name as sent, the e-mail then coming from
``emails``), ``emails`` the entries the directory sent with their ``type`` and
``primary`` (the member's e-mail is the primary one, else the first), ``name.givenName``
the given name, ``active`` and ``externalId`` as the directory set them, ``groups`` the
teams (read-only). ``Group`` ↔ team: ``displayName`` is the team's name, ``members`` its
members, ``externalId`` as set.

The models are ``scim2_models``' own; the schemas published at ``/Schemas`` are theirs
too, cut down to the attributes Questline keeps, so a directory (and the compliance
checker) sends only what is stored and reads back what it sent.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    Email,
    ETag,
    Filter,
    Group,
    GroupMember,
    GroupMembership,
    Meta,
    Name,
    Patch,
    Required,
    ResourceType,
    Schema,
    ServiceProviderConfig,
    Sort,
    User,
)

from questline.members.models import Member
from questline.teams.models import Team

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"

USER_ATTRIBUTES: dict[str, set[str] | None] = {
    "userName": None,
    "name": {"givenName"},
    "active": None,
    "emails": {"value", "type", "primary"},
    "groups": {"value", "$ref", "display"},
}
"""The User attributes Questline keeps (and for complex ones, the sub-attributes)."""
GROUP_ATTRIBUTES: dict[str, set[str] | None] = {
    "displayName": None,
    "members": {"value", "$ref", "type"},
}


REQUIRED: dict[str, set[str]] = {
    "userName": set(),
    "name": {"givenName"},
    "emails": {"value"},
}
"""Marked required in the published User schema: a member has an e-mail and a given
name. The service is lenient all the same: a user sent without ``name`` takes the
e-mail's local part (docs/identity.md)."""


def _cut(schema: Schema, keep: dict[str, set[str] | None]) -> Schema:
    kept = []
    for attribute in schema.attributes or []:
        if attribute.name not in keep:
            continue
        subs = keep[attribute.name]
        required_subs = REQUIRED.get(attribute.name or "", set())
        if subs is not None and attribute.sub_attributes:
            attribute = attribute.model_copy(
                update={
                    "sub_attributes": [
                        s.model_copy(update={"required": Required(s.name in required_subs)})
                        for s in attribute.sub_attributes
                        if s.name in subs
                    ]
                }
            )
        if attribute.name in REQUIRED and schema.id == USER_SCHEMA:
            attribute = attribute.model_copy(update={"required": Required.true})
        kept.append(attribute)
    return schema.model_copy(update={"attributes": kept})


def published_schemas(base_url: str) -> list[Schema]:
    schemas = []
    for model, keep in ((User, USER_ATTRIBUTES), (Group, GROUP_ATTRIBUTES)):
        schema = _cut(model.to_schema(), keep)
        schema.meta = Meta(resource_type="Schema", location=f"{base_url}/Schemas/{schema.id}")
        schemas.append(schema)
    return schemas


def resource_types(base_url: str) -> list[ResourceType]:
    return [
        ResourceType(
            id=name,
            name=name,
            endpoint=f"/{name}s",
            description=description,
            schema_=schema,
            meta=Meta(resource_type="ResourceType", location=f"{base_url}/ResourceTypes/{name}"),
        )
        for name, schema, description in (
            ("User", USER_SCHEMA, "A member of the organization"),
            ("Group", GROUP_SCHEMA, "A team of the organization"),
        )
    ]


def service_provider_config(base_url: str, max_results: int) -> ServiceProviderConfig:
    return ServiceProviderConfig(
        documentation_uri="https://questline.dev/docs/identity#scim-provisioning",
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=max_results),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=True),
        authentication_schemes=[
            AuthenticationScheme(
                type="oauthbearertoken",
                name="OAuth Bearer Token",
                description="A SCIM token of the organization (POST "
                "/organization/scim-tokens, or questline token create --role scim), as "
                "Authorization: Bearer.",
                primary=True,
            )
        ],
        meta=Meta(
            resource_type="ServiceProviderConfig", location=f"{base_url}/ServiceProviderConfig"
        ),
    )


def user_name_of(member: Member) -> str:
    return member.user_name or member.email


def emails_of(member: Member) -> list[dict[str, Any]]:
    """The member's e-mail entries: those the directory sent (types and ``primary``
    kept), the login entry (the primary one, else the first) carrying the member's
    current e-mail, which another route may have changed since; or the e-mail alone."""
    kept = [dict(entry) for entry in member.directory_emails or [] if entry.get("value")]
    if not kept:
        return [{"value": member.email}]
    marked = [i for i, entry in enumerate(kept) if entry.get("primary")]
    kept[marked[0] if marked else 0]["value"] = member.email
    return kept


def to_user(member: Member, team_ids: Sequence[uuid.UUID], base_url: str) -> User[Any]:
    location = f"{base_url}/Users/{member.id}"
    return User(
        id=str(member.id),
        external_id=member.external_id,
        user_name=user_name_of(member),
        name=Name(given_name=member.given_name),
        active=member.active,
        emails=[Email.model_validate(entry) for entry in emails_of(member)],
        groups=[GroupMembership(value=str(t), ref=f"{base_url}/Groups/{t}") for t in team_ids]
        or None,
        meta=Meta(
            resource_type="User",
            created=member.created_at,
            last_modified=member.updated_at or member.created_at,
            location=location,
        ),
    )


def to_group(team: Team, members: Sequence[tuple[uuid.UUID, str]], base_url: str) -> Group:
    """``members``: each member's id and e-mail."""
    return Group(
        id=str(team.id),
        external_id=team.external_id,
        display_name=team.name,
        members=[
            GroupMember(
                value=str(member_id),
                ref=f"{base_url}/Users/{member_id}",
                type="User",
            )
            for member_id, _email in members
        ]
        or None,
        meta=Meta(
            resource_type="Group",
            created=team.created_at,
            last_modified=team.updated_at,
            location=f"{base_url}/Groups/{team.id}",
        ),
    )


def dump(resource: User[Any] | Group, **options: Any) -> dict[str, Any]:
    """The resource as a response carries it, its ``meta.version`` the ETag."""
    document = resource.model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    version = etag_of_document(document)
    document.setdefault("meta", {})["version"] = version
    if options:
        document = resource.model_copy(
            update={"meta": resource.meta.model_copy(update={"version": version})}
            if resource.meta
            else {}
        ).model_dump(mode="json", scim_ctx=Context.RESOURCE_QUERY_RESPONSE, **options)
    return document


def etag_of_document(document: dict[str, Any]) -> str:
    """A weak validator of what the resource holds (``meta`` aside but its change time):
    equal documents, equal tags; any change to an attribute or membership, another."""
    import json

    body = {k: v for k, v in document.items() if k != "meta"}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:20]
    return f'W/"{digest}"'

"""xAPI 1.0.3 statements as JSON: the shapes, the IRIs and the deterministic ids.

Pure functions of what ``building`` looked up: no database, no HTTP. The shapes are
documented in docs/platforms.md ("xAPI").
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from questline.timeformat import rfc3339

XAPI_VERSION = "1.0.3"
STATEMENT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://questline.dev/xapi/statements")
"""uuid5 namespace of statement ids: ``uuid5(ns, "<event id>[/<part>]")``."""

VERB_COMPLETED = {
    "id": "http://adlnet.gov/expapi/verbs/completed",
    "display": {"en-US": "completed"},
}
VERB_VOIDED = {"id": "http://adlnet.gov/expapi/verbs/voided", "display": {"en-US": "voided"}}
VERB_SCORED = {"id": "http://adlnet.gov/expapi/verbs/scored", "display": {"en-US": "scored"}}
VERB_ANSWERED = {"id": "http://adlnet.gov/expapi/verbs/answered", "display": {"en-US": "answered"}}
VERB_EXPERIENCED = {
    "id": "http://adlnet.gov/expapi/verbs/experienced",
    "display": {"en-US": "experienced"},
}

ACTIVITY_TYPES = {
    "discipline": "http://adlnet.gov/expapi/activities/course",
    "level": "http://adlnet.gov/expapi/activities/module",
    "quest": "http://adlnet.gov/expapi/activities/lesson",
    "task": "http://adlnet.gov/expapi/activities/objective",
    "test": "http://adlnet.gov/expapi/activities/media",
    "adjustment": "http://adlnet.gov/expapi/activities/performance",
}
LANGUAGE = "und"
"""Titles are in whatever language the organization wrote them: "undetermined"."""


def statement_id(event_id: uuid.UUID, part: str = "") -> uuid.UUID:
    """The statement's id, derived from its event: a retry (or a second fan-out of the
    same event) produces the same id, which the LRS stores once."""
    return uuid.uuid5(STATEMENT_NAMESPACE, f"{event_id}/{part}" if part else str(event_id))


@dataclass(frozen=True, slots=True)
class Iris:
    """The IRIs of an organization's activities and accounts, under the service's public
    URL (``QUESTLINE_PUBLIC_URL``)."""

    public_url: str

    @property
    def base(self) -> str:
        return self.public_url.rstrip("/")

    @property
    def activities(self) -> str:
        return f"{self.base}/xapi/activities"

    def activity(self, kind: str, id: uuid.UUID | str) -> str:
        return f"{self.activities}/{kind}/{id}"

    def account_home(self) -> str:
        return self.base


@dataclass(frozen=True, slots=True)
class Node:
    """A task, quest, level or discipline: its id and title."""

    kind: str
    id: uuid.UUID
    title: str


@dataclass(frozen=True, slots=True)
class TeamOf:
    id: uuid.UUID
    name: str
    members: tuple[tuple[str, str], ...]
    """(name, e-mail) of each member."""


def activity(iris: Iris, node: Node) -> dict[str, Any]:
    return {
        "objectType": "Activity",
        "id": iris.activity(node.kind, node.id),
        "definition": {
            "name": {LANGUAGE: node.title},
            "type": ACTIVITY_TYPES[node.kind],
        },
    }


def agent(name: str, email: str) -> dict[str, Any]:
    return {"objectType": "Agent", "name": name, "mbox": f"mailto:{email}"}


def group(iris: Iris, team: TeamOf) -> dict[str, Any]:
    """The team as an identified Group (its account names it), with its members."""
    found: dict[str, Any] = {"objectType": "Group"}
    if team.name:  # a team deleted before the fan-out has none left
        found["name"] = team.name
    found["account"] = {"homePage": iris.account_home(), "name": f"team/{team.id}"}
    found["member"] = [agent(name, email) for name, email in team.members]
    return found


def completed(
    iris: Iris,
    *,
    id: uuid.UUID,
    team: TeamOf,
    member: tuple[str, str] | None,
    object: Node,
    parents: list[Node],
    raw: int,
    max: int,
    timestamp: dt.datetime,
) -> dict[str, Any]:
    """``<member or team> completed <task, level or discipline>``."""
    result = {"score": {"raw": raw, "min": 0, "max": max}, "completion": True}
    return _in_the_tree(
        iris,
        id=id,
        team=team,
        member=member,
        verb=VERB_COMPLETED,
        object=object,
        parents=parents,
        result=result,
        timestamp=timestamp,
    )


def answered(
    iris: Iris,
    *,
    id: uuid.UUID,
    team: TeamOf,
    member: tuple[str, str] | None,
    object: Node,
    parents: list[Node],
    success: bool,
    timestamp: dt.datetime,
) -> dict[str, Any]:
    """``<member or team> answered <task>``: one counted attempt at an ``Answer`` task.
    Whether it was right is ``result.success``; what was submitted is never part of it
    (no ``result.response``): a right answer is the task's answer."""
    return _in_the_tree(
        iris,
        id=id,
        team=team,
        member=member,
        verb=VERB_ANSWERED,
        object=object,
        parents=parents,
        result={"success": success},
        timestamp=timestamp,
    )


def _in_the_tree(
    iris: Iris,
    *,
    id: uuid.UUID,
    team: TeamOf,
    member: tuple[str, str] | None,
    verb: dict[str, Any],
    object: Node,
    parents: list[Node],
    result: dict[str, Any],
    timestamp: dt.datetime,
) -> dict[str, Any]:
    """A statement about a node of a discipline's tree: by the member (or else the
    team), in the team's context, with the node's parents as its parent activities."""
    return {
        "id": str(id),
        "actor": agent(*member) if member is not None else group(iris, team),
        "verb": verb,
        "object": activity(iris, object),
        "result": result,
        "context": {
            "team": group(iris, team),
            "platform": "Questline",
            "contextActivities": {"parent": [activity(iris, p) for p in parents]},
        },
        "timestamp": rfc3339(timestamp),
        "version": XAPI_VERSION,
    }


def adjusted(
    iris: Iris, *, id: uuid.UUID, team: TeamOf, adjustment: Node, points: int, at: dt.datetime
) -> dict[str, Any]:
    """``<team> scored <adjustment>``: an admin's change of the team's score; the
    adjustment is the activity (its reason the name), the points the raw score (negative
    for a deduction, so no ``min``/``max``)."""
    return {
        "id": str(id),
        "actor": group(iris, team),
        "verb": VERB_SCORED,
        "object": activity(iris, adjustment),
        "result": {"score": {"raw": points}},
        "context": {"team": group(iris, team), "platform": "Questline"},
        "timestamp": rfc3339(at),
        "version": XAPI_VERSION,
    }


def voided(
    iris: Iris, *, id: uuid.UUID, team: TeamOf, target: uuid.UUID, timestamp: dt.datetime
) -> dict[str, Any]:
    """``<team> voided <statement>``: the withdrawal of a completion."""
    return {
        "id": str(id),
        "actor": group(iris, team),
        "verb": VERB_VOIDED,
        "object": {"objectType": "StatementRef", "id": str(target)},
        "timestamp": rfc3339(timestamp),
        "version": XAPI_VERSION,
    }


def test(iris: Iris, *, id: uuid.UUID, subject: str, timestamp: dt.datetime) -> dict[str, Any]:
    """``POST /organization/xapi/test``: the caller experienced the connection test."""
    return {
        "id": str(id),
        "actor": {
            "objectType": "Agent",
            "account": {"homePage": iris.account_home(), "name": f"user/{subject}"},
        },
        "verb": VERB_EXPERIENCED,
        "object": {
            "objectType": "Activity",
            "id": f"{iris.activities}/test",
            "definition": {
                "name": {"en-US": "Questline LRS connection test"},
                "type": ACTIVITY_TYPES["test"],
            },
        },
        "timestamp": rfc3339(timestamp),
        "version": XAPI_VERSION,
    }

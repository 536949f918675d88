"""A task's `Check` and `Hints`, a discipline's `Sequential`: the document round trip, the
member view that never shows an answer or a locked hint, answers stored as keyed digests,
RE2 patterns compiled when saved."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from sqlalchemy import select

from questline.disciplines.checks import check_kind_of
from questline.disciplines.models import CheckKind, Task
from questline.events.models import Event
from questline.storage import tenancy
from questline.storage.db import Database
from tests.events.factories import listened_to
from tests.factories import World

pytestmark = pytest.mark.anyio

SECRETS = ("Hunter2-exact", "MixedCase Secret", "flag\\{[a-z]+\\}", "Open sesame hint")
"""Every answer and hint text of ``DOCUMENT``: none may reach a member, an event or the
audit log (the regex is the one admins read back as written)."""

DOCUMENT: dict[str, Any] = {
    "Title": "Capture the flag",
    "Description": "Four ways to complete a task.",
    "Sequential": True,
    "Levels": [
        {
            "Title": "Warm-up",
            "Quests": [
                {
                    "Title": "First steps",
                    "Tasks": [
                        {"Title": "Read the rules"},
                        {"Title": "Introduce yourself", "Check": {"Kind": "self"}},
                        {
                            "Title": "Find the flag",
                            "Points": 50,
                            "Check": {
                                "Kind": "Answer",
                                "MaxAttempts": 3,
                                "Answers": [
                                    {"Value": "Hunter2-exact"},
                                    {"Value": "MixedCase Secret", "Match": "ignorecase"},
                                    {"Value": "flag\\{[a-z]+\\}", "Match": "Regex"},
                                ],
                            },
                            "Hints": [
                                {"Text": "Open sesame hint", "Cost": 5},
                                {"Text": "Free look", "Cost": 0},
                            ],
                        },
                        {"Title": "Write it up", "Check": {"Kind": "Review"}},
                    ],
                }
            ],
        }
    ],
}


def tasks_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        task for level in document["Levels"] for quest in level["Quests"] for task in quest["Tasks"]
    ]


async def stored_answers(db: Database, task_id: str) -> Any:
    # The task by its id, whichever organization's (row security).
    with tenancy.for_every_organization():
        async with db.session(write=False) as session:
            return await session.scalar(select(Task.answers).where(Task.id == uuid.UUID(task_id)))


async def test_admins_read_every_check_and_members_never_an_answer(world: World) -> None:
    org = world.org()
    made = await world.client.post("/discipline", json=DOCUMENT, headers=org.admin)
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["Sequential"] is True
    plain, self_check, answer, review = tasks_of(body)
    assert plain["Check"] == {"Kind": "Admin", "MaxAttempts": None}
    assert self_check["Check"] == {"Kind": "Self", "MaxAttempts": None}
    assert review["Check"] == {"Kind": "Review", "MaxAttempts": None}
    assert answer["Check"]["Kind"] == "Answer"
    assert answer["Check"]["MaxAttempts"] == 3
    exact, ignore_case, regex = answer["Check"]["Answers"]
    assert regex == {"Match": "Regex", "Value": "flag\\{[a-z]+\\}"}  # as written
    assert exact["Match"] == "Exact"
    assert exact["Digest"].startswith("qd1:")
    assert ignore_case["Match"] == "IgnoreCase"
    assert ignore_case["Digest"] != exact["Digest"]
    assert "Value" not in exact
    assert "Value" not in ignore_case
    assert answer["Hints"] == [
        {"Text": "Open sesame hint", "Cost": 5},
        {"Text": "Free look", "Cost": 0},
    ]
    assert "Hunter2-exact" not in made.text
    assert "MixedCase Secret" not in made.text

    admin_read = await world.client.get(f"/discipline/{body['Id']}", headers=org.admin)
    assert admin_read.json() == body

    for _ in range(2):  # the route's answer, then the read model's kept one
        member_read = await world.client.get(f"/discipline/{body['Id']}", headers=org.member)
        assert member_read.status_code == 200
        member_tasks = tasks_of(member_read.json())
        assert member_tasks[2]["Check"] == {"Kind": "Answer", "MaxAttempts": 3}
        assert member_tasks[2]["Hints"] == [{"Cost": 5}, {"Cost": 0}]
        assert [t["Check"]["Kind"] for t in member_tasks] == ["Admin", "Self", "Answer", "Review"]
        for secret in (*SECRETS, "Free look", "qd1:"):
            assert secret not in member_read.text
    # The admin's view is not the member's kept one, nor the other way round.
    again = await world.client.get(f"/discipline/{body['Id']}", headers=org.admin)
    assert again.json() == body


async def test_exact_answers_are_stored_as_keyed_digests(world: World) -> None:
    org = world.org()
    made = (await world.client.post("/discipline", json=DOCUMENT, headers=org.admin)).json()
    stored = await stored_answers(world.db, tasks_of(made)[2]["Id"])
    text = json.dumps(stored)
    assert "Hunter2-exact" not in text
    assert "mixedcase secret" not in text.casefold()
    assert [a["Match"] for a in stored] == ["Exact", "IgnoreCase", "Regex"]

    # The same answer in another organization has another digest (a key per organization).
    other = world.org()
    theirs = (await world.client.post("/discipline", json=DOCUMENT, headers=other.admin)).json()
    mine = tasks_of(made)[2]["Check"]["Answers"][0]["Digest"]
    assert tasks_of(theirs)[2]["Check"]["Answers"][0]["Digest"] != mine


async def test_get_then_put_keeps_the_answers(world: World) -> None:
    org = world.org()
    made = (await world.client.post("/discipline", json=DOCUMENT, headers=org.admin)).json()
    url = f"/discipline/{made['Id']}"
    read = (await world.client.get(url, headers=org.admin)).json()
    replaced = await world.client.put(url, json={**read, "Title": "Renamed"}, headers=org.admin)
    assert replaced.status_code == 200, replaced.text
    assert tasks_of(replaced.json())[2]["Check"] == tasks_of(made)[2]["Check"]

    # A task sent by its Id without Answers keeps the stored ones (and a new MaxAttempts).
    edited = replaced.json()
    task = tasks_of(edited)[2]
    task["Check"] = {"Kind": "Answer", "MaxAttempts": None}
    again = await world.client.put(url, json=edited, headers=org.admin)
    assert again.status_code == 200, again.text
    kept = tasks_of(again.json())[2]["Check"]
    assert kept["Answers"] == tasks_of(made)[2]["Check"]["Answers"]
    assert kept["MaxAttempts"] is None

    # New answers replace the stored ones.
    task["Check"] = {"Kind": "Answer", "Answers": [{"Value": "new one"}]}
    changed = await world.client.put(url, json=edited, headers=org.admin)
    assert changed.status_code == 200, changed.text
    answers = tasks_of(changed.json())[2]["Check"]["Answers"]
    assert len(answers) == 1
    assert answers[0]["Digest"] not in json.dumps(made)


async def test_answers_that_cannot_be_kept_are_refused_naming_their_path(world: World) -> None:
    org = world.org()
    made = (await world.client.post("/discipline", json=DOCUMENT, headers=org.admin)).json()
    url = f"/discipline/{made['Id']}"
    path = "Levels[0].Quests[0].Tasks"

    edited = json.loads(json.dumps(made))
    tasks_of(edited)[2]["Check"]["Answers"][0]["Digest"] = "qd1:00000000:" + "0" * 64
    refused = await world.client.put(url, json=edited, headers=org.admin)
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["field"] == f"{path}[2].Check.Answers[0].Digest"

    # A task that was not an Answer task has no stored answers to keep.
    edited = json.loads(json.dumps(made))
    tasks_of(edited)[1]["Check"] = {"Kind": "Answer"}
    refused = await world.client.put(url, json=edited, headers=org.admin)
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["field"] == f"{path}[1].Check.Answers"

    # A new task likewise (on POST every Answer task needs its answers).
    document = json.loads(json.dumps(DOCUMENT))
    tasks_of(document)[2]["Check"].pop("Answers")
    refused = await world.client.post("/discipline", json=document, headers=org.admin)
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["field"] == f"{path}[2].Check.Answers"


async def test_an_invalid_pattern_is_refused_without_repeating_it(world: World) -> None:
    org = world.org()
    document = json.loads(json.dumps(DOCUMENT))
    pattern = "(?P<x>secret-pattern)\\1"  # a backreference: not RE2
    tasks_of(document)[2]["Check"]["Answers"][2]["Value"] = pattern
    refused = await world.client.post("/discipline", json=document, headers=org.admin)
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["field"] == (
        "Levels[0].Quests[0].Tasks[2].Check.Answers[2].Value"
    )
    assert "secret-pattern" not in refused.text
    # A pattern that needs backtracking elsewhere is fine in RE2 (linear time).
    tasks_of(document)[2]["Check"]["Answers"][2]["Value"] = "(a+)+$"
    accepted = await world.client.post("/discipline", json=document, headers=org.admin)
    assert accepted.status_code == 201, accepted.text


@pytest.mark.parametrize(
    ("check", "hints", "field"),
    [
        ({"Kind": "Self", "Answers": [{"Value": "x"}]}, [], "Check"),
        ({"Kind": "Review", "MaxAttempts": 2}, [], "Check"),
        ({"Kind": "Answer", "Answers": [], "MaxAttempts": 1}, [], "Check.Answers"),
        ({"Kind": "Answer", "Answers": [{"Value": "x"}] * 21}, [], "Check.Answers"),
        ({"Kind": "Answer", "Answers": [{"Value": "x" * 1001}]}, [], "Check.Answers[0].Value"),
        ({"Kind": "Answer", "Answers": [{"Value": ""}]}, [], "Check.Answers[0].Value"),
        ({"Kind": "Answer", "Answers": [{"Value": "x"}], "MaxAttempts": 0}, [], "MaxAttempts"),
        ({"Kind": "Answer", "Answers": [{"Value": "x", "Digest": "qd1:a:b"}]}, [], "Answers[0]"),
        ({"Kind": "Answer", "Answers": [{"Value": "x", "Match": "Glob"}]}, [], "Match"),
        ({"Kind": "Quiz"}, [], "Check.Kind"),
        ({"Kind": "Admin"}, [{"Text": "t", "Cost": 1}] * 11, "Hints"),
        ({"Kind": "Admin"}, [{"Text": "t", "Cost": 1_000_001}], "Hints[0].Cost"),
        ({"Kind": "Admin"}, [{"Text": "", "Cost": 1}], "Hints[0].Text"),
    ],
)
async def test_invalid_checks_and_hints_are_refused(
    world: World, check: dict[str, Any], hints: list[dict[str, Any]], field: str
) -> None:
    org = world.org()
    document = {
        "Title": "T",
        "Description": "D",
        "Levels": [
            {
                "Title": "L",
                "Quests": [
                    {"Title": "Q", "Tasks": [{"Title": "X", "Check": check, "Hints": hints}]}
                ],
            }
        ],
    }
    refused = await world.client.post("/discipline", json=document, headers=org.admin)
    assert refused.status_code == 422, refused.text
    fields = [error["field"] for error in refused.json()["errors"]]
    assert any(field in f for f in fields), fields
    assert "x" * 1001 not in refused.text


async def test_events_and_the_audit_log_carry_no_answer(world: World) -> None:
    org = world.org()
    await listened_to(org)  # a consumer listens: its events are recorded
    made = (await world.client.post("/discipline", json=DOCUMENT, headers=org.admin)).json()
    url = f"/discipline/{made['Id']}"
    edited = json.loads(json.dumps(made))
    tasks_of(edited)[2]["Check"]["Answers"].append({"Value": "Another-secret"})
    assert (await world.client.put(url, json=edited, headers=org.admin)).status_code == 200

    with tenancy.acting_for(org.id):  # read directly: as the organization
        async with world.db.session(write=False) as session:
            payloads = (
                await session.scalars(select(Event.payload).where(Event.organization_id == org.id))
            ).all()
    assert payloads
    text = json.dumps(payloads)
    for secret in (*SECRETS[:3], "Another-secret", "qd1:"):
        assert secret not in text
    assert "Open sesame hint" in text  # webhooks carry hint texts (not answers)

    audit = await world.client.get("/audit", params={"limit": 100}, headers=org.admin)
    entries = [e for e in audit.json() if e["Action"].startswith("discipline.")]
    replaced = next(e for e in entries if e["Action"] == "discipline.replaced")
    task_id = tasks_of(made)[2]["Id"]
    checks = replaced["Changes"]["Checks"]
    before, after = checks["Before"][task_id], checks["After"][task_id]
    assert (before["Kind"], before["Answers"], after["Answers"]) == ("Answer", 3, 4)
    assert before["AnswersVersion"] != after["AnswersVersion"]
    for secret in (*SECRETS, "Another-secret", "qd1:"):
        assert secret not in audit.text


async def test_a_tasks_check_kind_for_another_domain(world: World) -> None:
    org, other = world.org(), world.org()
    made = (await world.client.post("/discipline", json=DOCUMENT, headers=org.admin)).json()
    await world.client.get("/team", headers=other.admin)  # registers the organization
    # Each organization's look-ups in a transaction that acts for it, as a request's do.
    with tenancy.acting_for(org.id):
        async with world.db.session() as session:
            kinds = [
                await check_kind_of(session, org_id=org.id, task_id=uuid.UUID(task["Id"]))
                for task in tasks_of(made)
            ]
            assert kinds == [CheckKind.ADMIN, CheckKind.SELF, CheckKind.ANSWER, CheckKind.REVIEW]
            assert await check_kind_of(session, org_id=org.id, task_id=uuid.uuid4()) is None
    task_id = uuid.UUID(tasks_of(made)[3]["Id"])
    with tenancy.acting_for(other.id):
        async with world.db.session() as session:
            assert await check_kind_of(session, org_id=other.id, task_id=task_id) is None


async def test_the_schema_publishes_checks_hints_and_sequential(world: World) -> None:
    schemas = (await world.client.get("/openapi.json")).json()["components"]["schemas"]
    task = schemas["TaskInput"]["properties"]
    assert task["Hints"]["maxItems"] == 10
    check = schemas["CheckInput"]["properties"]
    assert check["Answers"]["anyOf"][0]["maxItems"] == 20
    assert check["MaxAttempts"]["anyOf"][0]["minimum"] == 1
    assert set(schemas["CheckKind"]["enum"]) == {"Admin", "Self", "Answer", "Review"}
    assert set(schemas["Match"]["enum"]) == {"Exact", "IgnoreCase", "Regex"}
    assert schemas["HintInput"]["properties"]["Cost"]["maximum"] == 1_000_000
    assert "Sequential" in schemas["DisciplineCreate"]["properties"]
    assert {"Check", "Hints"} <= set(schemas["Task"]["properties"])

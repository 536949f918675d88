"""The learners' rows (``POST /team/{id}/attempts``, ``POST /team/{id}/hints``): what they
act on, set up through the API of the running service, as an organization's admin would.

The seeded dataset has neither ``Answer`` tasks, hints nor members with e-mail addresses,
so before the first learners' row of a size: one discipline (an ``Answer`` task with
unlimited attempts, ``HINTED`` tasks with one hint each, one spare of each for the
pre-flight), one member in each of the first ``TEAMS`` teams, and a member token with
that member's ``email`` claim (the caller's member: ``members/callers.py``). The id files
are lines of ``team task token``: each request acts as a member of its own team.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.dataset.seed import Seeded
from bench.harness.service import settings_for
from questline.auth.tokens import TokenService
from questline.web.identity import Role

TEAMS = 1_000
"""Teams given a member. With one member a team, one member's answers a minute are the
service's requests/s * 60 / this, under ``service.ATTEMPTS_PER_MINUTE``."""
HINTED = 20
"""Tasks with a hint: ``TEAMS`` * this first unlocks, more than a row's window sends."""
RIGHT = "bench-right-answer"
WRONG = "bench-wrong-answer"


@dataclass(frozen=True, slots=True)
class Learners:
    attempts: Path
    """``team task token`` lines: the ``Answer`` task, for every team with a member."""
    hints: Path
    """``team task token`` lines: every hinted task, for every team with a member."""
    spare_team: str
    spare_token: str
    spare_answer_task: str
    spare_hint_task: str
    """The pre-flight's: a team and tasks the measured requests never touch."""


def _document() -> dict[str, Any]:
    def answer(title: str) -> dict[str, Any]:
        check = {"Kind": "Answer", "Answers": [{"Value": RIGHT}]}
        return {"Title": title, "Points": 5, "Check": check}

    hinted = [
        {"Title": f"Hinted {i}", "Points": 1, "Hints": [{"Text": f"Hint {i}", "Cost": 1}]}
        for i in range(HINTED + 1)
    ]
    return {
        "Title": "Bench learners",
        "Description": "The learners' rows of the benchmark.",
        "Levels": [
            {
                "Title": "Only",
                "Quests": [
                    {"Title": "Answers", "Tasks": [answer("Answer"), answer("Spare answer")]},
                    {"Title": "Hints", "Tasks": hinted},
                ],
            }
        ],
    }


def prepare(base_url: str, admin_token: str, seeded: Seeded, workdir: Path) -> Learners:
    """The discipline, members and tokens (once per seeded organization and size)."""
    tokens = TokenService(settings_for(workdir, None))
    run = uuid.uuid4().hex[:8]
    headers = {"Authorization": f"Bearer {admin_token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client:
        made = client.post("/discipline", json=_document())
        made.raise_for_status()
        quests = made.json()["Levels"][0]["Quests"]
        answer, spare_answer = (t["Id"] for t in quests[0]["Tasks"])
        *hinted, spare_hint = (t["Id"] for t in quests[1]["Tasks"])
        teams = [str(t) for t in seeded.team_ids[: TEAMS + 1]]
        member_tokens = []
        for index, team in enumerate(teams):
            email = f"bench-learner-{run}-{index}@example.org"
            added = client.post(
                f"/team/{team}/members", json={"email": email, "givenName": f"L{index}"}
            )
            added.raise_for_status()
            member_tokens.append(
                tokens.mint(
                    role=Role.MEMBER,
                    org_id=seeded.org_id,
                    subject=f"bench-learner-{index}",
                    email=email,
                    lifetime=dt.timedelta(hours=6),
                )
            )
    *measured, spare_team = teams
    *measured_tokens, spare_token = member_tokens
    attempts = workdir / f"ids-attempts-{seeded.org_id}-{len(seeded.team_ids)}.txt"
    attempts.write_text(
        "".join(f"{t} {answer} {k}\n" for t, k in zip(measured, measured_tokens, strict=True))
    )
    hints = workdir / f"ids-hints-{seeded.org_id}-{len(seeded.team_ids)}.txt"
    # Task-major: consecutive requests go to different teams (no team's lock queues them).
    hints.write_text(
        "".join(
            f"{t} {task} {k}\n"
            for task in hinted
            for t, k in zip(measured, measured_tokens, strict=True)
        )
    )
    return Learners(attempts, hints, spare_team, spare_token, spare_answer, spare_hint)


def preflight(
    base_url: str, admin_token: str, learners: Learners, kind: str
) -> list[httpx.Response]:
    """One request of the row's kind on the spare team and tasks (a right answer is
    withdrawn again, as the row does); the answers to check."""
    member = {"Authorization": f"Bearer {learners.spare_token}"}
    admin = {"Authorization": f"Bearer {admin_token}"}
    with httpx.Client(base_url=base_url, timeout=60) as client:
        team = learners.spare_team
        if kind == "hint":
            body: dict[str, Any] = {"TaskId": learners.spare_hint_task, "Index": 0}
            return [client.post(f"/team/{team}/hints", json=body, headers=member)]
        answer = RIGHT if kind == "right" else WRONG
        body = {"TaskId": learners.spare_answer_task, "Answer": answer}
        answers = [client.post(f"/team/{team}/attempts", json=body, headers=member)]
        if kind == "right":
            task = learners.spare_answer_task
            answers.append(client.delete(f"/team/{team}/progress/{task}", headers=admin))
        return answers


def withdraw_answered(base_url: str, admin_token: str, learners: Learners) -> int:
    """Withdraw every right answer the warm-up left completed (its last answers come
    back after wrk stops, and are never withdrawn): the measured run then meets no
    ``already-completed``. Returns how many it withdrew."""
    admin = {"Authorization": f"Bearer {admin_token}"}
    withdrawn = 0
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for line in learners.attempts.read_text().splitlines():
            team, task, _ = line.split()
            gone = client.delete(f"/team/{team}/progress/{task}", headers=admin)
            if gone.status_code == 204:
                withdrawn += 1
            elif gone.status_code != 404:
                gone.raise_for_status()
    return withdrawn

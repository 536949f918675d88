"""An organization for the browser tests, made through the live server's HTTP API.

One full discipline (two levels, three quests, five tasks of 10 to 50 points, resources
on every kind of node), four ranked teams with distinct scores, and one admin team
whose score would top the leaderboard if it were ranked.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

from questline.web.identity import Role
from tests.dashboard.live import LiveServer

DISCIPLINE: dict[str, Any] = {
    "Title": "Web security",
    "Description": "From headers to a content security policy.",
    "Color": "Purple",
    "Resources": [
        {"Title": "OWASP Top 10", "Url": "https://owasp.example.org/top10", "Kind": "Book"}
    ],
    "Levels": [
        {
            "Title": "Basics",
            "Description": "What every page needs.",
            "Resources": [{"Title": "MDN: HTTP", "Url": "https://mdn.example.org/http"}],
            "Quests": [
                {
                    "Title": "Headers",
                    "Tasks": [
                        {
                            "Title": "Send HSTS",
                            "Points": 10,
                            "Resources": [
                                {
                                    "Title": "HSTS explained",
                                    "Url": "https://example.org/hsts",
                                    "Kind": "Video",
                                }
                            ],
                        },
                        {"Title": "Set nosniff", "Points": 20},
                    ],
                },
                {"Title": "Cookies", "Tasks": [{"Title": "Mark cookies Secure", "Points": 30}]},
            ],
        },
        {
            "Title": "Advanced",
            "Quests": [
                {
                    "Title": "Content security policy",
                    "Resources": [{"Title": "CSP guide", "Url": "https://example.org/csp"}],
                    "Tasks": [
                        {"Title": "Write a policy", "Points": 40},
                        {"Title": "Drop unsafe-inline", "Points": 50},
                    ],
                }
            ],
        },
    ],
}

# Team name → how many of the discipline's tasks (in reading order) it completed.
RANKED = {"Owls": 4, "Foxes": 3, "Bears": 2, "Wolves": 0}  # scores 100, 60, 30, 0
ADMIN_TEAM = "Board"  # all 5 tasks: 150 points, yet never ranked


@dataclass
class SeededOrg:
    id: uuid.UUID
    admin_token: str
    member_token: str
    discipline: dict[str, Any]
    teams: dict[str, str] = field(default_factory=dict)
    """Team name → id."""
    scores: dict[str, int] = field(default_factory=dict)
    started_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    """Team number i (in seeding order) completed its task n at started_at + 6n + i hours."""

    @property
    def task_ids(self) -> list[str]:
        return [
            task["Id"]
            for level in self.discipline["Levels"]
            for quest in level["Quests"]
            for task in quest["Tasks"]
        ]

    @property
    def ranked_by_score(self) -> list[str]:
        """The ranked teams' ids, highest score first."""
        names = sorted(RANKED, key=lambda n: -self.scores[n])
        return [self.teams[n] for n in names]


def seed_org(server: LiveServer) -> SeededOrg:
    """A fresh organization (its own id: tests do not see each other's data)."""
    org_id = uuid.uuid4()
    admin_token = server.token(org_id, Role.ADMIN, subject="e2e-admin")
    with server.client(admin_token) as api:
        created = api.post("/discipline", json=DISCIPLINE)
        assert created.status_code == 201, created.text
        org = SeededOrg(
            id=org_id,
            admin_token=admin_token,
            member_token=server.token(org_id, Role.MEMBER, subject="e2e-member"),
            discipline=created.json(),
            started_at=dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
            - dt.timedelta(days=2),
        )
        points = [10, 20, 30, 40, 50]
        start = org.started_at
        for index, (name, done) in enumerate([*RANKED.items(), (ADMIN_TEAM, 5)]):
            response = api.post("/team", json={"name": name, "tags": ["e2e"]})
            assert response.status_code == 201, response.text
            team_id = response.json()["Id"]
            org.teams[name] = team_id
            for n, task_id in enumerate(org.task_ids[:done]):
                at = start + dt.timedelta(hours=6 * n + index)
                body = {"TaskId": task_id, "CompletedAt": at.isoformat()}
                response = api.post(f"/team/{team_id}/progress", json=body)
                assert response.status_code == 201, response.text
            org.scores[name] = sum(points[:done])
        flagged = api.post(f"/team/{org.teams[ADMIN_TEAM]}/isadminteam")
        assert flagged.status_code == 200, flagged.text
        assert flagged.json()["IsAdminTeam"] is True
    return org

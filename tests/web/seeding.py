"""An organization with teams, members (and disciplines, where those routes exist), made
through the API, whose ids the fuzzer and the isolation matrix put into paths.

It only uses routes that the OpenAPI document lists, so it keeps working while other
domains land; what a domain adds is seeded here once its routes exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.factories import Org, unique

PATH_POOLS = {
    "team_id": "teams",
    "member_id": "members",
    "discipline_id": "disciplines",
    "task_id": "tasks",
}
"""Path parameter name → the pool of seeded ids it draws from."""


@dataclass
class Seeded:
    """Ids of one organization's resources, by pool."""

    org: Org
    kept: dict[str, list[str]] = field(default_factory=dict)
    """Used by every operation but the deletion of the resource itself."""
    doomed: dict[str, list[str]] = field(default_factory=dict)
    """Only for ``DELETE /x/{id}``, so that deletions leave the kept ids resolving."""

    def pool(self, param: str, *, deleting: bool) -> list[str]:
        name = PATH_POOLS.get(param)
        if name is None:
            return []
        source = self.doomed if deleting else self.kept
        return source.get(name) or self.kept.get(name, [])


def _collect_ids(node: Any, key: str, found: list[str]) -> None:
    """Every ``Id`` under ``key`` lists, anywhere in a discipline document."""
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key and isinstance(value, list):
                found.extend(str(item["Id"]) for item in value if isinstance(item, dict))
            _collect_ids(value, key, found)
    elif isinstance(node, list):
        for item in node:
            _collect_ids(item, key, found)


def _discipline_document(title: str) -> dict[str, Any]:
    task = {"Title": "Read the guide", "Description": "All of it.", "Points": 5}
    quest = {"Title": "First quest", "Description": "Start here.", "Tasks": [task, dict(task)]}
    level = {"Title": "Level one", "Description": "Basics.", "Quests": [quest]}
    return {"Title": title, "Description": "Seeded for tests.", "Color": "Green", "Levels": [level]}


async def seed_organization(org: Org, paths: dict[str, Any], *, teams: int = 4) -> Seeded:
    """Teams with members; disciplines with tasks and some progress when those exist."""
    seeded = Seeded(org=org)
    for pool, count in (("teams", teams), ("doomed", teams)):
        made = []
        for _ in range(count):
            team = await org.create_team(tags=["seeded"])
            for _ in range(2):
                response = await org.add_member(team["Id"])
                assert response.status_code == 201, response.text
            made.append(team)
        if pool == "teams":
            seeded.kept["teams"] = [t["Id"] for t in made]
        else:
            seeded.doomed["teams"] = [t["Id"] for t in made]
    members = await org.client.get("/member", headers=org.admin)
    assert members.status_code == 200, members.text
    seeded.kept["members"] = [m["Id"] for m in members.json()]
    if "post" in paths.get("/discipline", {}):
        await _seed_disciplines(org, seeded)
    if "post" in paths.get("/team/{team_id}/progress", {}) and seeded.kept.get("tasks"):
        await _seed_progress(org, seeded)
    return seeded


async def _seed_progress(org: Org, seeded: Seeded) -> None:
    """The first kept team completed the first task (its other tasks stay open)."""
    team_id, task_id = seeded.kept["teams"][0], seeded.kept["tasks"][0]
    response = await org.client.post(
        f"/team/{team_id}/progress", json={"TaskId": task_id}, headers=org.admin
    )
    assert response.status_code == 201, response.text


async def _seed_disciplines(org: Org, seeded: Seeded) -> None:
    for pool in ("kept", "doomed"):
        ids: list[str] = []
        for _ in range(2):
            response = await org.client.post(
                "/discipline", json=_discipline_document(unique("Discipline")), headers=org.admin
            )
            assert response.status_code == 201, response.text
            body = response.json()
            ids.append(str(body["Id"]))
            if pool == "kept":
                tasks: list[str] = []
                _collect_ids(body, "Tasks", tasks)
                seeded.kept.setdefault("tasks", []).extend(tasks)
        getattr(seeded, pool)["disciplines"] = ids

"""Factories for disciplines: documents of any size, created through the API.

doc = discipline_document(levels=2, quests=3, tasks=4)
discipline = await create_discipline(world.client, org.admin, levels=2, tasks=3)
ids = task_ids(discipline)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from tests.factories import unique


def resource_document(label: str, *, kind: str = "Link") -> dict[str, Any]:
    return {
        "Title": f"Resource {label}",
        "Description": f"About {label}",
        "Url": f"https://example.org/{label}",
        "Kind": kind,
    }


def discipline_document(
    *,
    levels: int = 2,
    quests: int = 2,
    tasks: int = 2,
    resources: int = 1,
    points: int | None = 10,
    title: str | None = None,
    color: str | None = "Green",
    **fields: Any,
) -> dict[str, Any]:
    """A full document: ``levels`` x ``quests`` x ``tasks``, with ``resources`` on every
    node. Task points are ``points`` (``None``: 1, 2, 3, … in reading order)."""
    counter = iter(range(1, 10**9))

    def res(prefix: str) -> list[dict[str, Any]]:
        return [resource_document(f"{prefix}r{i}") for i in range(resources)]

    def task(prefix: str) -> dict[str, Any]:
        value = points if points is not None else next(counter)
        return {
            "Title": f"Task {prefix}",
            "Description": "",
            "Points": value,
            "Resources": res(prefix),
        }

    document: dict[str, Any] = {
        "Title": title or unique("Discipline"),
        "Description": "A discipline made by the test factory.",
        "Resources": res("d"),
        "Levels": [
            {
                "Title": f"Level {li}",
                "Description": f"Level {li} description",
                "Resources": res(f"l{li}"),
                "Quests": [
                    {
                        "Title": f"Quest {li}.{qi}",
                        "Description": f"Quest {li}.{qi} description",
                        "Resources": res(f"l{li}q{qi}"),
                        "Tasks": [task(f"l{li}q{qi}t{ti}") for ti in range(tasks)],
                    }
                    for qi in range(quests)
                ],
            }
            for li in range(levels)
        ],
        **fields,
    }
    if color is not None:
        document["Color"] = color
    return document


async def create_discipline(
    client: httpx.AsyncClient,
    headers: Mapping[str, str],
    document: dict[str, Any] | None = None,
    **size: Any,
) -> dict[str, Any]:
    """POST the document (or a ``discipline_document(**size)``); returns the created tree."""
    body = document if document is not None else discipline_document(**size)
    response = await client.post("/discipline", json=body, headers=dict(headers))
    assert response.status_code == 201, response.text
    return dict(response.json())


def iter_tasks(discipline: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for level in discipline["Levels"]:
        for quest in level["Quests"]:
            yield from quest["Tasks"]


def task_ids(discipline: Mapping[str, Any]) -> list[str]:
    """Every task id of a discipline as read, in reading order."""
    return [task["Id"] for task in iter_tasks(discipline)]


def without_ids(node: Any) -> Any:
    """The document with every ``Id`` and ``Order`` removed (for comparing with input)."""
    if isinstance(node, list):
        return [without_ids(item) for item in node]
    if isinstance(node, dict):
        return {k: without_ids(v) for k, v in node.items() if k not in ("Id", "Order")}
    return node


def editable(node: Any) -> Any:
    """The document as read, without the fields a PUT does not take (ids are kept)."""
    if isinstance(node, list):
        return [editable(item) for item in node]
    if isinstance(node, dict):
        dropped = {"Order", "CreatedAt", "UpdatedAt"}
        return {k: editable(v) for k, v in node.items() if k not in dropped}
    return node

"""The demo's learning content: one full discipline of each color.

Each discipline has three levels of two quests of three tasks; every node carries a
resource. Task points grow with the level (10, 20, 30).
"""

from __future__ import annotations

from typing import Any

# color → (title, description, [(level, [(quest, [task, task, task])])])
DISCIPLINES: dict[str, tuple[str, str, list[tuple[str, list[tuple[str, list[str]]]]]]] = {
    "Purple": (
        "Product Discovery",
        "Find out what users need before building it.",
        [
            (
                "Listen",
                [
                    ("Talk to users", ["Book five interviews", "Write a script", "Share notes"]),
                    ("Read the signals", ["Tag support tickets", "Read reviews", "Map themes"]),
                ],
            ),
            (
                "Frame",
                [
                    (
                        "Name the problem",
                        ["Write a problem statement", "List assumptions", "Rank risks"],
                    ),
                    ("Size it", ["Estimate reach", "Estimate effort", "Pick a metric"]),
                ],
            ),
            (
                "Test",
                [
                    ("Prototype", ["Sketch three options", "Build a clickable mock", "Review it"]),
                    ("Learn", ["Run five tests", "Summarize findings", "Decide next step"]),
                ],
            ),
        ],
    ),
    "Green": (
        "Cloud Foundations",
        "Accounts, tools and a first service running in the cloud.",
        [
            (
                "Accounts and tools",
                [
                    ("Get access", ["Create your account", "Enable two-factor", "Install the CLI"]),
                    ("Set up", ["Configure a profile", "Create a sandbox", "Tag resources"]),
                ],
            ),
            (
                "First service",
                [
                    ("Deploy", ["Containerize the app", "Push an image", "Deploy it"]),
                    ("Expose", ["Add a load balancer", "Set up DNS", "Turn on TLS"]),
                ],
            ),
            (
                "Operate",
                [
                    ("Observe", ["Ship logs", "Add a dashboard", "Create an alert"]),
                    ("Save", ["Review costs", "Right-size instances", "Clean up the sandbox"]),
                ],
            ),
        ],
    ),
    "Red": (
        "Security Essentials",
        "Everyday habits that keep the organization safe.",
        [
            (
                "Hygiene",
                [
                    (
                        "Passwords",
                        ["Use a password manager", "Rotate old passwords", "Audit shares"],
                    ),
                    ("Devices", ["Encrypt your disk", "Update everything", "Lock your screen"]),
                ],
            ),
            (
                "Threats",
                [
                    ("Phishing", ["Take the phishing quiz", "Report a test mail", "Check links"]),
                    ("Secrets", ["Scan a repository", "Move a secret to a vault", "Revoke a key"]),
                ],
            ),
            (
                "Response",
                [
                    ("Prepare", ["Read the runbook", "Know who to call", "Join a drill"]),
                    ("Recover", ["Restore a backup", "Write a postmortem", "Fix the root cause"]),
                ],
            ),
        ],
    ),
}


def _resource(title: str, slug: str) -> dict[str, Any]:
    return {"Title": title, "Url": f"https://learn.questline.dev/{slug}", "Kind": "Link"}


def _slug(*parts: str) -> str:
    return "/".join(p.lower().replace(" ", "-") for p in parts)


LEARNERS_COLOR = "Green"
"""The demo discipline whose tasks learners complete themselves, in turn by each kind."""
DEMO_ANSWER = "questline"
"""The answer of its ``Answer`` tasks (any case), so a newcomer can try one."""


def _check(color: str, position: int) -> dict[str, Any]:
    """The ``Check`` and ``Hints`` of a task: the learners' discipline cycles through the
    four kinds (Admin, Self, Answer, Review); the others keep the default (Admin)."""
    if color != LEARNERS_COLOR:
        return {}
    kind = ("Admin", "Self", "Answer", "Review")[position % 4]
    if kind != "Answer":
        return {"Check": {"Kind": kind}}
    return {
        "Check": {
            "Kind": "Answer",
            "Answers": [{"Value": DEMO_ANSWER, "Match": "IgnoreCase"}],
            "MaxAttempts": 5,
        },
        "Hints": [
            {"Text": "It is the name of this service.", "Cost": 2},
            {"Text": f"It starts with {DEMO_ANSWER[:5]!r}.", "Cost": 5},
        ],
    }


def document(color: str) -> dict[str, Any]:
    """The full discipline document of one color, as ``POST /discipline`` takes it."""
    made = _document(color)
    tasks = [t for lv in made["Levels"] for q in lv["Quests"] for t in q["Tasks"]]
    for position, task in enumerate(tasks):
        task.update(_check(color, position))
    return made


def _document(color: str) -> dict[str, Any]:
    title, description, levels = DISCIPLINES[color]
    return {
        "Title": title,
        "Description": description,
        "Color": color,
        "Resources": [_resource(f"{title} handbook", _slug(title))],
        "Levels": [
            {
                "Title": level,
                "Description": f"Level {li + 1} of {title}.",
                "Resources": [_resource(f"{level} overview", _slug(title, level))],
                "Quests": [
                    {
                        "Title": quest,
                        "Description": "",
                        "Resources": [_resource(f"{quest} guide", _slug(title, quest))],
                        "Tasks": [
                            {
                                "Title": task,
                                "Description": "",
                                "Points": 10 * (li + 1),
                                "Resources": [_resource(task, _slug(title, quest, task))],
                            }
                            for task in tasks
                        ],
                    }
                    for quest, tasks in quests
                ],
            }
            for li, (level, quests) in enumerate(levels)
        ],
    }

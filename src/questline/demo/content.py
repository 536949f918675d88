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


def document(color: str) -> dict[str, Any]:
    """The full discipline document of one color, as ``POST /discipline`` takes it."""
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

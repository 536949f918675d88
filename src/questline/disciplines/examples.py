"""Examples shown in the OpenAPI document: documents to send (copy, edit, send), and a
discipline as the service writes it."""

from __future__ import annotations

from typing import Any

from questline.web.example_ids import AT, DISCIPLINE, LATER, LEVEL, ORG, QUEST, RESOURCE, TASK

DIGEST = "qd1:5f1c2a9b:" + "3" * 64
"""An ``Exact`` answer as admins read it: its keyed digest, never its value."""

BASIC_DOCUMENT: dict[str, Any] = {
    "Title": "Cloud basics",
    "Description": "Everything a new engineer needs before the first deploy.",
    "Color": "Purple",
}

FULL_DOCUMENT: dict[str, Any] = {
    "Title": "Cloud basics",
    "Description": "Everything a new engineer needs before the first deploy.",
    "Color": "Green",
    "Resources": [
        {
            "Title": "Handbook",
            "Description": "The team handbook.",
            "Url": "https://example.org/handbook",
            "Kind": "Link",
        }
    ],
    "Levels": [
        {
            "Title": "Foundations",
            "Description": "Accounts, tools and the first service.",
            "Resources": [],
            "Quests": [
                {
                    "Title": "Get access",
                    "Description": "",
                    "Resources": [],
                    "Tasks": [
                        {
                            "Title": "Create your account",
                            "Description": "Sign in once with your company e-mail.",
                            "Points": 10,
                            "Resources": [
                                {
                                    "Title": "Sign-in guide",
                                    "Url": "https://example.org/sign-in",
                                    "Kind": "Video",
                                }
                            ],
                        },
                        {
                            "Title": "Install the CLI",
                            "Points": 20,
                            "Check": {"Kind": "Self"},
                        },
                        {
                            "Title": "Find the region",
                            "Description": "Which region does the team deploy to?",
                            "Points": 20,
                            "Check": {
                                "Kind": "Answer",
                                "Answers": [
                                    {"Value": "eu-west-1", "Match": "IgnoreCase"},
                                    {"Value": "eu-west-[0-9]", "Match": "Regex"},
                                ],
                                "MaxAttempts": 5,
                            },
                            "Hints": [{"Text": "Look at the deploy pipeline.", "Cost": 5}],
                        },
                    ],
                }
            ],
        },
        {
            "Title": "Shipping",
            "Quests": [
                {
                    "Title": "First deploy",
                    "Tasks": [{"Title": "Deploy hello-world", "Check": {"Kind": "Review"}}],
                }
            ],
        },
    ],
}

_RESOURCE: dict[str, Any] = {
    "Id": RESOURCE,
    "Order": 0,
    "Title": "OWASP Top 10",
    "Description": "",
    "Url": "https://owasp.org/www-project-top-ten/",
    "Kind": "Link",
}
_BASE: dict[str, Any] = {
    "Id": DISCIPLINE,
    "Title": "Web security",
    "Description": "From headers to a content security policy.",
    "OrganizationId": ORG,
    "Color": "Purple",
    "Sequential": False,
    "CreatedAt": AT,
    "UpdatedAt": LATER,
}
DISCIPLINE_OUT: dict[str, Any] = {
    **_BASE,
    "Resources": [_RESOURCE],
    "Levels": [
        {
            "Id": LEVEL,
            "Order": 0,
            "Title": "Basics",
            "Description": "What every page needs.",
            "Resources": [],
            "Quests": [
                {
                    "Id": QUEST,
                    "Order": 0,
                    "Title": "Headers",
                    "Description": "",
                    "Resources": [],
                    "Tasks": [
                        {
                            "Id": TASK,
                            "Order": 0,
                            "Title": "Send HSTS",
                            "Description": "Strict-Transport-Security on every response.",
                            "Points": 10,
                            "Resources": [],
                            "Check": {
                                "Kind": "Answer",
                                "MaxAttempts": 3,
                                "Answers": [
                                    {"Match": "Regex", "Value": "max-age=[0-9]+"},
                                    {"Match": "Exact", "Digest": DIGEST},
                                ],
                            },
                            "Hints": [{"Text": "Look at the response headers.", "Cost": 2}],
                        }
                    ],
                }
            ],
        }
    ],
}
"""A discipline as ``GET /discipline/{id}`` writes it for an admin (a member reads each
``Check`` as ``Kind`` and ``MaxAttempts`` and each hint's ``Cost`` only)."""

SUMMARY_OUT: dict[str, Any] = {
    **_BASE,
    "LevelCount": 1,
    "QuestCount": 1,
    "TaskCount": 1,
    "PointsTotal": 10,
}
"""A discipline as ``GET /discipline`` lists it."""

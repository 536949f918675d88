"""Example documents shown in the OpenAPI document (copy, edit, send)."""

from __future__ import annotations

from typing import Any

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
                        {"Title": "Install the CLI", "Points": 20},
                    ],
                }
            ],
        },
        {
            "Title": "Shipping",
            "Quests": [{"Title": "First deploy", "Tasks": [{"Title": "Deploy hello-world"}]}],
        },
    ],
}

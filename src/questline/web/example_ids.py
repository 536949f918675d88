"""Identifiers and times that the API document's examples share, so that the example of
one domain can name a resource of another (a member's `TeamIds`, a team's `Members`)."""

from __future__ import annotations

ORG = "0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b10"
TEAM = "0193a6f3-1a2b-7c3d-8e4f-5a6b7c8d9e01"
MEMBER = "0193a6f4-2b3c-7d4e-9f5a-6b7c8d9e0f11"
DISCIPLINE = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a21"
LEVEL = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a22"
QUEST = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a23"
TASK = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a24"
RESOURCE = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a25"
WEBHOOK = "0193a6f6-4d5e-7f60-9a7b-8c9d0e1f2a31"
EVENT = "0193a6f7-5e6f-7a71-8b8c-9d0e1f2a3b41"
DELIVERY = "0193a6f8-6f70-7b82-9c9d-0e1f2a3b4c51"
AT = "2026-11-20T09:30:00Z"
LATER = "2026-11-21T14:05:00Z"
SEASON = "0193a6f9-7a81-7c93-8dae-1f2a3b4c5d61"

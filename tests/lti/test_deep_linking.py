"""Deep linking: an instructor picks a view; Questline answers with a signed
``LtiDeepLinkingResponse`` that the platform can verify with Questline's keys."""

from __future__ import annotations

import re

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.factories import World
from tests.lti.support import launch, refusal, register
from tests.support.lti_platform import INSTRUCTOR, LEARNER, LtiPlatform, form_fields

pytestmark = pytest.mark.anyio

DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
TICKET = re.compile(r"name=ticket value='([^']+)'")


async def _picker(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform, roles: list[str]
) -> httpx.Response:
    org = world.org()
    await register(org, platform)
    created = await client.post(
        "/discipline",
        json={"Title": "Phishing", "Description": "Spot the bait"},
        headers=org.admin,
    )
    assert created.status_code == 201, created.text
    claims = platform.claims_for(
        "teacher-dl", email="teach@example.org", roles=roles, message_type="LtiDeepLinkingRequest"
    )
    return await launch(client, platform, f"hint-dl-{len(roles)}-{roles[0][-7:]}", claims)


async def test_an_instructor_picks_a_disciplines_leaderboard(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    picker = await _picker(world, client, platform, [INSTRUCTOR])
    assert picker.status_code == 200, picker.text
    assert f"frame-ancestors {platform.origin}" in picker.headers["content-security-policy"]
    assert "Phishing" in picker.text
    ticket = TICKET.search(picker.text)
    assert ticket is not None
    discipline = re.search(r"<option value='([0-9a-f-]+)'>Phishing", picker.text)
    assert discipline is not None
    form = {"ticket": ticket.group(1), "choice": "discipline", "discipline": discipline.group(1)}
    answer = await client.post("/lti/deep-link", data=form)
    assert answer.status_code == 200, answer.text
    assert f"form-action {platform.origin}" in answer.headers["content-security-policy"]
    assert f"action='{platform.base}/deep-link-return'" in answer.text
    token = form_fields(answer.text)["JWT"]
    published = (await client.get("/.well-known/jwks.json")).json()
    decoded = jwt.decode(token, KeySet.import_key_set(published), algorithms=["RS256"])
    claims = decoded.claims
    assert claims["iss"] == platform.client_id
    assert claims["aud"] == platform.issuer
    assert claims[LTI + "message_type"] == "LtiDeepLinkingResponse"
    assert claims[LTI + "version"] == "1.3.0"
    assert claims[LTI + "deployment_id"] == platform.deployment_id
    assert claims[DL + "data"] == "opaque-platform-data"
    assert claims[DL + "content_items"] == [
        {
            "type": "ltiResourceLink",
            "title": "Leaderboard: Phishing",
            "url": f"http://questline.test/lti/view/leaderboard?discipline={discipline.group(1)}",
        }
    ]
    # The ticket is spent.
    again = await client.post("/lti/deep-link", data=form)
    assert refusal(again) == "deep-link"


async def test_learners_cannot_add_links_and_unknown_choices_are_refused(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    refused = await _picker(world, client, platform, [LEARNER])
    assert refused.status_code == 403
    assert refusal(refused) == "not-instructor"
    assert f"frame-ancestors {platform.origin}" in refused.headers["content-security-policy"]
    bogus = await client.post("/lti/deep-link", data={"ticket": "made-up", "choice": "team"})
    assert refusal(bogus) == "deep-link"

"""The 1EdTech Security Framework's negative cases for the tool, sent by a platform we
did not write (OpenLearning's ``lti1p3platform``, tests/support/third_party_lti.py) to
Questline running as a service. The package builds and signs each launch; a
``Forgery`` changes what an attacker would. Each is refused with its documented page
(docs/platforms.md, "Refusals") and changes nothing: no session, no member, no person
remembered.

The same cases against our own test platform are in tests/lti/test_launch.py
(``test_misdirected_launches_are_refused`` and its neighbours)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from questline.lti.models import LtiPerson
from questline.storage import tenancy
from tests.factories import Org, World
from tests.lti.support import refusal, set_cookies
from tests.lti.third_party import authenticate, launch, on_tool, post, register, sessions
from tests.support.harness import AppHarness
from tests.support.live import LiveServer
from tests.support.third_party_lti import (
    LEARNER,
    Forgery,
    Link,
    ThirdPartyPlatform,
    User,
    in_roster,
    rsa_pem_pair,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
NOW = int(time.time())
OTHER_PRIVATE, _ = rsa_pem_pair()


async def _unchanged(app_state: AppHarness, org: Org) -> None:
    assert await sessions(app_state) == 0
    assert (await org.client.get("/member", headers=org.admin)).json() == []
    with tenancy.for_every_organization():
        async with app_state.db.session(write=False) as session:
            assert await session.scalar(select(func.count()).select_from(LtiPerson)) == 0


def _refused(answer: httpx.Response, reason: str, tool: LiveServer | None = None) -> None:
    assert answer.status_code in (400, 401, 403), answer.text
    # On a mismatch, the tool's own account of its refusals (its log names the check
    # that failed, which the page does not).
    said = tool.logs()[-4000:] if tool is not None and refusal(answer) != reason else ""
    assert refusal(answer) == reason, f"{answer.text}\n{said}"
    assert "questline_session" not in set_cookies(answer)


async def _ready(world: World, http: httpx.AsyncClient, platform: ThirdPartyPlatform) -> Org:
    org = on_tool(world.org(), http)
    await register(org, platform)
    platform.enrol("eve", User("eve-sub", [LEARNER], "Eve", "eve@example.org"))
    platform.place("course-home", Link())
    # In the course's roster too: the sync a good launch starts keeps her.
    platform.set_roster([in_roster("eve-sub", "eve@example.org")])
    return org


def _forgeries(client_id: str) -> list[Any]:
    return [
        pytest.param(Forgery(claims={"aud": "another-tool"}), "audience", id="wrong-aud"),
        pytest.param(Forgery(drop=("aud",)), "audience", id="missing-aud"),
        pytest.param(
            Forgery(claims={"aud": [client_id, "another-tool"], "azp": "another-tool"}),
            "audience",
            id="azp-not-ours-several-audiences",
        ),
        pytest.param(
            Forgery(claims={"aud": [client_id, "another-tool"]}),
            "audience",
            id="several-audiences-one-untrusted",
        ),
        pytest.param(
            Forgery(claims={"exp": NOW - 3600, "iat": NOW - 3900}), "expired", id="expired-exp"
        ),
        pytest.param(
            Forgery(claims={"iat": NOW + 86_400, "exp": NOW + 90_000}),
            "expired",
            id="iat-in-the-future",
        ),
        pytest.param(Forgery(kid="unknown-kid"), "signature", id="unknown-kid"),
        pytest.param(Forgery(key=OTHER_PRIVATE), "signature", id="another-key"),
        pytest.param(
            Forgery(key=OTHER_PRIVATE, kid="platform"), "signature", id="another-key-same-kid"
        ),
        pytest.param(Forgery(alg="none"), "signature", id="alg-none"),
        pytest.param(Forgery(alg="HS256-public"), "signature", id="hs256-with-the-public-key"),
        pytest.param(Forgery(claims={"iss": "https://evil.example"}), "issuer", id="wrong-iss"),
        pytest.param(
            Forgery(claims={LTI + "deployment_id": "unknown-deployment"}),
            "deployment",
            id="unknown-deployment",
        ),
        pytest.param(Forgery(drop=(LTI + "message_type",)), "invalid-token", id="no-message-type"),
        pytest.param(Forgery(drop=(LTI + "version",)), "invalid-token", id="no-version"),
        pytest.param(Forgery(drop=(LTI + "roles",)), "invalid-token", id="no-roles"),
        pytest.param(Forgery(drop=(LTI + "deployment_id",)), "invalid-token", id="no-deployment"),
        pytest.param(Forgery(drop=("nonce",)), "nonce", id="no-nonce"),
    ]


@pytest.mark.parametrize(("forgery", "reason"), _forgeries("questline-third-party"))
async def test_a_forged_launch_is_refused_and_changes_nothing(
    world: World,
    tool: LiveServer,
    third_party: ThirdPartyPlatform,
    app_state: AppHarness,
    forgery: Forgery,
    reason: str,
) -> None:
    assert third_party.data.client_id == "questline-third-party"
    if forgery.kid == "platform":  # the platform's own kid on another key
        forgery = dataclasses.replace(forgery, kid=third_party.kid)
    async with httpx.AsyncClient(base_url=tool.url, timeout=120) as http:
        org = await _ready(world, http, third_party)
        third_party.forge("eve", forgery)
        try:
            answer = await launch(http, third_party, tool, user="eve", link="course-home")
        finally:
            third_party.forge("eve", None)
        _refused(answer, reason, tool)
        await _unchanged(app_state, org)


async def test_a_replayed_launch_and_a_wrong_state_are_refused(
    world: World, tool: LiveServer, third_party: ThirdPartyPlatform, app_state: AppHarness
) -> None:
    async with httpx.AsyncClient(base_url=tool.url, timeout=120) as http:
        org = await _ready(world, http, third_party)
        # Another state than the login's: unknown.
        sent = await authenticate(http, third_party, tool, user="eve", link="course-home")
        sent.fields["state"] = "not-the-logins-state"
        _refused(await post(http, third_party, sent), "state")
        # The login's state without the login's browser cookie.
        sent = await authenticate(http, third_party, tool, user="eve", link="course-home")
        sent.cookie = None
        _refused(await post(http, third_party, sent), "state-browser")
        await _unchanged(app_state, org)

        genuine = await authenticate(http, third_party, tool, user="eve", link="course-home")
        first = await post(http, third_party, genuine)
        assert first.status_code == 303, first.text
        # The same post again: its state is spent.
        _refused(await post(http, third_party, genuine), "state")
        # The same ID token (its nonce) with a fresh login's state: the nonce is not
        # that login's.
        fresh = await authenticate(http, third_party, tool, user="eve", link="course-home")
        fresh.fields["id_token"] = genuine.fields["id_token"]
        _refused(await post(http, third_party, fresh), "nonce")
        assert await sessions(app_state) == 1

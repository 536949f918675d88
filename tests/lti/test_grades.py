"""Assignment and Grade Services: a team's progress in a discipline becomes a score of
each of its members in the discipline's line item, posted through the outbox."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest
from sqlalchemy import select, update

from questline.config import Settings
from questline.events import fanout
from questline.lti.grades_dispatcher import GradesDispatcher
from questline.lti.models import LtiScore
from questline.storage import tenancy
from tests.factories import World
from tests.lti.support import launch, register
from tests.progress.factories import completed, make_discipline
from tests.support.harness import AppHarness
from tests.support.lti_platform import LtiPlatform

pytestmark = pytest.mark.anyio


async def _deliver(settings: Settings, app_state: AppHarness) -> None:
    """The outbox fanned out, then grades passes until nothing is due."""
    while await fanout.fan_out(app_state.db, app_state.outbox_consumers):
        pass
    dispatcher = GradesDispatcher(settings, app_state.db, app_state.state.signing_secret)
    try:
        for _ in range(20):
            more = await dispatcher.run_once()
            started = dispatcher.in_flight
            await dispatcher.settle()  # the pass starts the attempts; wait for them here
            if not more and not started:
                break
    finally:
        await dispatcher.close()


async def test_progress_posts_each_members_score_in_the_disciplines_line_item(
    world: World,
    client: httpx.AsyncClient,
    platform: LtiPlatform,
    app_state: AppHarness,
    settings: Settings,
) -> None:
    org = world.org()
    await register(org, platform)
    keys = (await client.get("/.well-known/jwks.json")).json()
    platform.trust_tool_keys(keys, "http://questline.test/lti/launch")
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[10, 20]]], title="Crypto")
    team = await org.create_team("Rockets")
    assert (await org.add_member(team["Id"], email="ada@example.org")).status_code == 201
    claims = platform.claims_for("ada-sub", email="ada@example.org")
    launched = await launch(client, platform, "hint-ags", claims, **platform.ags_claim())
    assert launched.status_code == 303, launched.text
    before = len(platform.scores())

    assert await completed(org, team["Id"], tree.task(0, 0, 0)) == 10
    await _deliver(settings, app_state)
    scores = platform.scores()[before:]
    assert [(s["userId"], s["scoreGiven"], s["scoreMaximum"]) for s in scores] == [
        ("ada-sub", 10, 30)
    ]
    assert scores[0]["activityProgress"] == "InProgress"
    items = list(platform.state.line_items.values())
    assert [
        (i["label"], i["resourceId"]) for i in items if i["resourceId"].endswith(str(tree.id))
    ] == [("Crypto", f"questline-discipline-{tree.id}")]
    # The next change reuses the line item, and sends the new value.
    assert await completed(org, team["Id"], tree.task(0, 0, 1)) == 30
    await _deliver(settings, app_state)
    last = platform.scores()[-1]
    assert (last["scoreGiven"], last["activityProgress"]) == (30, "Completed")
    assert (
        len([i for i in platform.state.line_items.values() if str(tree.id) in i["resourceId"]]) == 1
    )
    # Nothing left to send: a pass finds nothing.
    sent = len(platform.scores())
    await _deliver(settings, app_state)
    assert len(platform.scores()) == sent


async def test_a_score_the_platform_refused_is_retried_and_a_withdrawal_resends(
    world: World,
    client: httpx.AsyncClient,
    platform: LtiPlatform,
    app_state: AppHarness,
    settings: Settings,
) -> None:
    org = world.org()
    await register(org, platform)
    platform.state.tool_keys = None  # the platform does not trust Questline's keys yet
    tree = await make_discipline(app_state.db, org_id=org.id, shape=[[[5, 5]]], title="Retry")
    team = await org.create_team("Comets")
    assert (await org.add_member(team["Id"], email="bo@example.org")).status_code == 201
    claims = platform.claims_for("bo-sub", email="bo@example.org")
    assert (
        await launch(client, platform, "hint-retry", claims, **platform.ags_claim())
    ).status_code == 303
    assert await completed(org, team["Id"], tree.task(0, 0, 0)) == 5
    before = len(platform.scores())
    await _deliver(settings, app_state)
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=False) as session:
            row = await session.scalar(select(LtiScore).where(LtiScore.organization_id == org.id))
    assert row is not None
    assert (row.status, row.attempts, row.last_status_code) == ("Pending", 1, 401)
    assert len(platform.scores()) == before
    # The platform now trusts the keys; the retry is due: the score goes.
    keys = (await client.get("/.well-known/jwks.json")).json()
    platform.trust_tool_keys(keys, "http://questline.test/lti/launch")
    with tenancy.acting_for(org.id):
        async with app_state.db.session() as session:
            await session.execute(update(LtiScore).values(next_attempt_at=dt.datetime.now(dt.UTC)))
    await _deliver(settings, app_state)
    assert [(s["userId"], s["scoreGiven"]) for s in platform.scores()[before:]] == [("bo-sub", 5)]
    # A withdrawal sends the lower score.
    withdrawn = await client.delete(
        f"/team/{team['Id']}/progress/{tree.task(0, 0, 0)}", headers=org.admin
    )
    assert withdrawn.status_code == 204, withdrawn.text
    await _deliver(settings, app_state)
    assert platform.scores()[-1]["scoreGiven"] == 0

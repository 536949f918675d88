"""Cross-organization attacks on webhooks: two organizations subscribe the SAME receiver
URL (the outside identifier they share), in both orders. Each organization's events
reach it signed with that organization's secret only; neither reads, retries, rotates
or re-enables the other's webhooks or deliveries; a sealed secret copied across does
not open. (Here rather than in tests/security: these need this folder's conftest — a
receiver on loopback, private URLs allowed.)"""

from __future__ import annotations

from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook as Verifier
from standardwebhooks.webhooks import WebhookVerificationError

from tests.factories import Org, World
from tests.support.harness import AppHarness
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import drain, subscribe

pytestmark = pytest.mark.anyio


async def _deliveries(org: Org, hook: dict[str, Any]) -> list[dict[str, Any]]:
    response = await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    assert response.status_code == 200
    return list(response.json())


@pytest.mark.parametrize("first_is_a", [True, False])
async def test_two_organizations_on_one_receiver_url_stay_apart(
    world: World, app_state: AppHarness, hook_receiver: Receiver, first_is_a: bool
) -> None:
    a, b = world.org(), world.org()
    order = [a, b] if first_is_a else [b, a]
    hooks = {org.id: await subscribe(org, hook_receiver.url) for org in order}
    hook_a, hook_b = hooks[a.id], hooks[b.id]
    assert hook_a["Url"] == hook_b["Url"]
    assert hook_a["Secret"] != hook_b["Secret"]

    team_a = await a.create_team("A's team")
    team_b = await b.create_team("B's team")
    await drain(app_state)
    received = hook_receiver.wait_for(2)
    assert len(received) == 2
    by_team: dict[str, Any] = {}
    for request in received:
        by_team[request.json()["data"]["Id"]] = request
    for team, own, other in (
        (team_a, hook_a, hook_b),
        (team_b, hook_b, hook_a),
    ):
        request = by_team[team["Id"]]
        Verifier(own["Secret"]).verify(request.body, request.headers)
        with pytest.raises(WebhookVerificationError):
            Verifier(other["Secret"]).verify(request.body, request.headers)

    # Each sees its own delivery only, under its own webhook.
    [delivery_a] = await _deliveries(a, hook_a)
    [delivery_b] = await _deliveries(b, hook_b)
    assert delivery_a["EventId"] != delivery_b["EventId"]

    # B acting on A's ids (and A on B's), with its own webhook id or the other's: 404.
    for actor, own_hook, victim_hook, victim_delivery in (
        (b, hook_b, hook_a, delivery_a),
        (a, hook_a, hook_b, delivery_b),
    ):
        for webhook_id in (victim_hook["Id"], own_hook["Id"]):
            retried = await actor.client.post(
                f"/webhook/{webhook_id}/deliveries/{victim_delivery['Id']}/retry",
                headers=actor.admin,
            )
            assert retried.status_code == 404, retried.text
            assert retried.headers["content-type"] == "application/problem+json"
        base = f"/webhook/{victim_hook['Id']}"
        for method, url, body in (
            ("GET", base, None),
            ("PATCH", base, {"Url": hook_receiver.url + "/stolen"}),
            ("POST", f"{base}/secret", None),
            ("GET", f"{base}/deliveries", None),
            ("DELETE", base, None),
        ):
            response = await actor.client.request(method, url, json=body, headers=actor.admin)
            assert response.status_code == 404, (method, url, response.text)
            assert victim_hook["Secret"] not in response.text

    # Nothing of the attempts changed either webhook or sent anything more.
    await drain(app_state)
    assert len(hook_receiver.requests) == 2
    for org, hook in ((a, hook_a), (b, hook_b)):
        shown = (await org.client.get(f"/webhook/{hook['Id']}", headers=org.admin)).json()
        assert shown["Url"] == hook_receiver.url
        assert shown["PreviousSecretExpiresAt"] is None  # never rotated
        [delivery] = await _deliveries(org, hook)
        assert (delivery["Status"], delivery["Attempts"]) == ("Succeeded", 1)

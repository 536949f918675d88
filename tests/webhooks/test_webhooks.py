"""Signed webhooks: the admin API, signatures a receiver verifies with the
``standardwebhooks`` library, retries, disabling, rotation and tenant isolation."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from sqlalchemy import func, select
from standardwebhooks.webhooks import Webhook as Verifier
from standardwebhooks.webhooks import WebhookVerificationError

from questline.events.models import Event
from questline.storage import tenancy
from questline.teams import schemas as team_schemas
from questline.teams import service as teams_service
from questline.webhooks.dispatcher import Dispatcher
from questline.webhooks.models import Webhook as WebhookRow
from tests.factories import World
from tests.support.harness import AppHarness
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import drain, pending_count, subscribe

pytestmark = pytest.mark.anyio


async def test_a_delivery_is_signed_and_carries_the_resource_as_the_api_returns_it(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url, ["team.created", "team.updated"])
    assert hook["Secret"].startswith("whsec_")
    team = await org.create_team("Rockets", tags=["a"])
    await drain(app_state)
    [received] = hook_receiver.wait_for(1)
    payload = Verifier(hook["Secret"]).verify(received.body, received.headers)
    assert payload["type"] == "team.created"
    assert payload["data"] == team
    assert payload["timestamp"].endswith("Z")
    assert received.headers["webhook-id"].startswith("msg_")
    assert received.headers["content-type"] == "application/json"
    with pytest.raises(WebhookVerificationError):
        Verifier("whsec_" + "A" * 43 + "=").verify(received.body, received.headers)


async def test_only_subscribed_events_of_the_own_organization_are_sent(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org, other = world.org(), world.org()
    await subscribe(org, hook_receiver.url, ["team.updated"])
    team = await org.create_team()
    await other.create_team()
    response = await org.client.patch(
        f"/team/{team['Id']}", json={"Name": "Renamed"}, headers=org.admin
    )
    assert response.status_code == 200
    await drain(app_state)
    requests = hook_receiver.requests
    assert [r.json()["type"] for r in requests] == ["team.updated"]
    assert requests[0].json()["data"] == response.json()
    # The outbox keeps the event that was sent (done) and nothing of those no webhook
    # receives: both organizations' team.created are gone.
    with tenancy.for_every_organization():  # both organizations' events
        async with app_state.db.session(write=False) as session:
            kept = (
                await session.execute(select(Event.organization_id, Event.type, Event.pending))
            ).all()
    assert [tuple(row) for row in kept] == [(org.id, "team.updated", False)]


async def test_a_rolled_back_change_sends_nothing(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    await subscribe(org, hook_receiver.url)
    with tenancy.acting_for(org.id):
        async with app_state.db.new_session(write=True) as session:
            await teams_service.create_team(
                session, org_id=org.id, data=team_schemas.TeamCreate(name="Never")
            )
            assert session.info  # the event was recorded in this transaction
            await session.rollback()
    await drain(app_state)
    with tenancy.for_every_organization():
        async with app_state.db.session(write=False) as session:
            assert await session.scalar(select(func.count()).select_from(Event)) == 0
    assert hook_receiver.requests == []
    assert (await org.client.get("/team", headers=org.admin)).json() == []


async def test_a_failing_request_sends_nothing(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    """DELETE /discipline records its event, then refuses (409): the event goes too."""
    org = world.org()
    await subscribe(org, hook_receiver.url, ["discipline.deleted", "progress.completed"])
    created = await org.client.post(
        "/discipline",
        json={
            "Title": "T",
            "Description": "D",
            "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [{"Title": "X"}]}]}],
        },
        headers=org.admin,
    )
    assert created.status_code == 201, created.text
    document = created.json()
    task_id = document["Levels"][0]["Quests"][0]["Tasks"][0]["Id"]
    team = await org.create_team()
    done = await org.client.post(
        f"/team/{team['Id']}/progress", json={"TaskId": task_id}, headers=org.admin
    )
    assert done.status_code == 201
    refused = await org.client.delete(f"/discipline/{document['Id']}", headers=org.admin)
    assert refused.status_code == 409
    await drain(app_state)
    assert [r.json()["type"] for r in hook_receiver.requests] == ["progress.completed"]
    assert hook_receiver.requests[0].json()["data"] == done.json()


async def test_retries_keep_the_webhook_id_and_the_list_shows_the_attempts(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    hook_receiver.answers = [500, 503]
    await org.create_team()
    await drain(app_state)
    requests = hook_receiver.wait_for(3)
    assert len(requests) == 3
    assert len({r.headers["webhook-id"] for r in requests}) == 1
    for request in requests:
        Verifier(hook["Secret"]).verify(request.body, request.headers)
    response = await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    assert response.status_code == 200
    [delivery] = response.json()
    assert delivery["Status"] == "Succeeded"
    assert delivery["Attempts"] == 3
    assert delivery["LastStatusCode"] == 204
    assert delivery["Event"] == "team.created"
    assert requests[0].headers["webhook-id"] == f"msg_{delivery['EventId'].replace('-', '')}"


async def test_a_success_ends_the_webhook_s_failing_spell(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    """A 2xx after a failure: the webhook is no longer failing (the clock that disables
    a webhook failing too long starts again at its next failure)."""
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)

    async def failing_since() -> object:
        with tenancy.for_every_organization():
            async with app_state.db.session(write=False) as session:
                return await session.scalar(
                    select(WebhookRow.failing_since).where(WebhookRow.id == uuid.UUID(hook["Id"]))
                )

    hook_receiver.answers = [500]
    await org.create_team()
    once = app_state.settings.model_copy(update={"webhooks_max_attempts": 1})
    await drain(app_state, settings=once)
    assert len(hook_receiver.wait_for(1)) == 1
    assert await failing_since() is not None

    await org.create_team()
    await drain(app_state)
    assert len(hook_receiver.wait_for(2)) == 2
    assert await failing_since() is None
    [newest, oldest] = (
        await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    ).json()
    assert (newest["Status"], newest["LastStatusCode"]) == ("Succeeded", 204)
    assert (oldest["Status"], oldest["LastStatusCode"]) == ("Failed", 500)


async def test_a_webhook_failing_too_long_is_disabled_and_says_so(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    hook_receiver.answers = [500]
    await org.create_team()
    impatient = app_state.settings.model_copy(update={"webhooks_disable_after_seconds": 0})
    await drain(app_state, settings=impatient)
    shown = (await org.client.get(f"/webhook/{hook['Id']}", headers=org.admin)).json()
    assert shown["Enabled"] is False
    assert "failed" in shown["DisabledReason"]
    [delivery] = (
        await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    ).json()
    assert delivery["Status"] == "Failed"
    assert delivery["LastStatusCode"] == 500
    retry_url = f"/webhook/{hook['Id']}/deliveries/{delivery['Id']}/retry"
    assert (await org.client.post(retry_url, headers=org.admin)).status_code == 409
    enabled = await org.client.patch(
        f"/webhook/{hook['Id']}", json={"Enabled": True}, headers=org.admin
    )
    assert enabled.json()["DisabledReason"] is None
    retried = await org.client.post(retry_url, headers=org.admin)
    assert retried.status_code == 202
    assert retried.json()["Status"] == "Pending"
    await drain(app_state)
    requests = hook_receiver.wait_for(2)
    assert requests[0].headers["webhook-id"] == requests[1].headers["webhook-id"]
    [delivery] = (
        await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    ).json()
    assert delivery["Status"] == "Succeeded"


async def test_a_delivery_gives_up_after_the_last_attempt(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    hook_receiver.answers = [500] * 10
    await org.create_team()
    await drain(
        app_state, settings=app_state.settings.model_copy(update={"webhooks_max_attempts": 3})
    )
    assert len(hook_receiver.requests) == 3
    [delivery] = (
        await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    ).json()
    assert (delivery["Status"], delivery["Attempts"]) == ("Failed", 3)


async def test_a_rotated_secret_signs_beside_the_new_one(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    rotated = await org.client.post(f"/webhook/{hook['Id']}/secret", headers=org.admin)
    assert rotated.status_code == 200
    new_secret = rotated.json()["Secret"]
    assert new_secret != hook["Secret"]
    assert rotated.json()["PreviousSecretExpiresAt"]
    await org.create_team()
    await drain(app_state)
    [received] = hook_receiver.wait_for(1)
    assert len(received.headers["webhook-signature"].split(" ")) == 2
    Verifier(hook["Secret"]).verify(received.body, received.headers)
    Verifier(new_secret).verify(received.body, received.headers)


async def test_deliveries_are_paged_newest_first(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    for _ in range(3):
        await org.create_team()
    await drain(app_state)
    url = f"/webhook/{hook['Id']}/deliveries"
    first = await org.client.get(url, params={"limit": 2}, headers=org.admin)
    assert len(first.json()) == 2
    next_url = httpx.URL(first.headers["Link"].split(";")[0].strip("<>"))
    second = await org.client.get(next_url.path, params=dict(next_url.params), headers=org.admin)
    ids = [d["Id"] for d in first.json() + second.json()]
    assert len(ids) == 3
    assert ids == sorted(ids, reverse=True)
    assert "Link" not in second.headers


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/hook",
        "http://localhost:8080/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "ftp://example.org/hook",
        "http://user:pw@93.184.215.14/hook",
        "not a url",
    ],
)
async def test_internal_and_malformed_urls_are_refused(
    world: World, app_state: AppHarness, url: str
) -> None:
    app_state.configure(webhooks_allow_private_urls=False)
    org = world.org()
    response = await org.client.post(
        "/webhook", json={"url": url, "events": ["team.created"]}, headers=org.admin
    )
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert (await org.client.get("/webhook", headers=org.admin)).json() == []


async def test_a_public_address_is_accepted_and_a_patch_to_an_internal_one_refused(
    world: World, app_state: AppHarness
) -> None:
    app_state.configure(webhooks_allow_private_urls=False)
    org = world.org()
    hook = await subscribe(org, "https://93.184.215.14/hook")
    assert hook["Url"] == "https://93.184.215.14/hook"
    refused = await org.client.patch(
        f"/webhook/{hook['Id']}", json={"Url": "http://127.0.0.1/x"}, headers=org.admin
    )
    assert refused.status_code == 422
    shown = await org.client.get(f"/webhook/{hook['Id']}", headers=org.admin)
    assert shown.json()["Url"] == "https://93.184.215.14/hook"
    assert "Secret" not in shown.json()


async def test_the_address_is_checked_again_at_delivery_time(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    """A name that now resolves inside (DNS rebinding) is refused when sending."""
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    await org.create_team()
    strict = app_state.settings.model_copy(
        update={"webhooks_allow_private_urls": False, "webhooks_max_attempts": 1}
    )
    await drain(app_state, settings=strict)
    assert hook_receiver.requests == []
    [delivery] = (
        await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    ).json()
    assert delivery["Status"] == "Failed"
    assert "public addresses" in delivery["LastError"]


async def test_webhooks_are_invisible_across_organizations(
    world: World, hook_receiver: Receiver, app_state: AppHarness
) -> None:
    owner, stranger = world.org(), world.org()
    hook = await subscribe(owner, hook_receiver.url)
    await owner.create_team()
    await drain(app_state)
    [delivery] = (
        await owner.client.get(f"/webhook/{hook['Id']}/deliveries", headers=owner.admin)
    ).json()
    base = f"/webhook/{hook['Id']}"
    calls = [
        ("GET", base, None),
        ("PATCH", base, {"Enabled": False}),
        ("DELETE", base, None),
        ("POST", f"{base}/secret", None),
        ("GET", f"{base}/deliveries", None),
        ("POST", f"{base}/deliveries/{delivery['Id']}/retry", None),
    ]
    for method, url, body in calls:
        response = await stranger.client.request(method, url, json=body, headers=stranger.admin)
        assert response.status_code == 404, (method, url, response.text)
    assert (await stranger.client.get("/webhook", headers=stranger.admin)).json() == []
    assert (await owner.client.get(base, headers=owner.admin)).json()["Enabled"] is True


async def test_members_may_not_manage_webhooks(world: World, hook_receiver: Receiver) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    base = f"/webhook/{hook['Id']}"
    calls = [
        ("POST", "/webhook", {"url": hook_receiver.url, "events": ["team.created"]}),
        ("GET", "/webhook", None),
        ("GET", base, None),
        ("PATCH", base, {"Enabled": False}),
        ("DELETE", base, None),
        ("POST", f"{base}/secret", None),
        ("GET", f"{base}/deliveries", None),
    ]
    for method, url, body in calls:
        response = await org.client.request(method, url, json=body, headers=org.member)
        assert response.status_code == 403, (method, url, response.text)
    assert (await org.client.get(base, headers=org.admin)).json()["Enabled"] is True


async def test_unknown_event_types_and_fields_are_refused(
    world: World, hook_receiver: Receiver
) -> None:
    org = world.org()
    for body in (
        {"url": hook_receiver.url, "events": ["team.exploded"]},
        {"url": hook_receiver.url, "events": []},
        {"url": hook_receiver.url, "events": ["team.created"], "colour": "red"},
    ):
        response = await org.client.post("/webhook", json=body, headers=org.admin)
        assert response.status_code == 422, body


async def test_deleting_a_webhook_stops_its_deliveries(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    org = world.org()
    hook = await subscribe(org, hook_receiver.url)
    deleted = await org.client.delete(f"/webhook/{hook['Id']}", headers=org.admin)
    assert deleted.status_code == 204
    await org.create_team()
    await drain(app_state)
    assert hook_receiver.requests == []
    assert (await org.client.get(f"/webhook/{hook['Id']}", headers=org.admin)).status_code == 404


@pytest.mark.postgres_only
async def test_two_dispatchers_never_send_one_delivery_twice(
    world: World, app_state: AppHarness, hook_receiver: Receiver, backend: str
) -> None:
    """``FOR UPDATE SKIP LOCKED``: concurrent passes split the work between them."""
    org = world.org()
    await subscribe(org, hook_receiver.url)
    for _ in range(30):
        await org.create_team()
    dispatchers = [
        Dispatcher(app_state.settings, app_state.db, consumers=app_state.outbox_consumers)
        for _ in range(3)
    ]
    try:
        for _ in range(30):  # each pass claims what fits the slots: as many as it takes
            await asyncio.gather(*(d.run_once() for d in dispatchers))
            await asyncio.gather(*(d.settle() for d in dispatchers))
            if await pending_count(app_state.db) == 0:
                break
    finally:
        for dispatcher in dispatchers:
            await dispatcher.close()
    requests = hook_receiver.wait_for(30)
    ids = [r.headers["webhook-id"] for r in requests]
    assert len(ids) == len(set(ids)) == 30


async def test_global_discipline_events_reach_every_subscribed_organization(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    from tests.factories import bearer

    first, second = world.org(), world.org()
    await subscribe(first, hook_receiver.url, ["discipline.created"])
    await subscribe(second, hook_receiver.url, ["discipline.created"])
    await subscribe(world.org(), hook_receiver.url, ["team.created"])
    created = await world.client.post(
        "/discipline",
        json={"Title": "Global", "Description": "For all"},
        headers=bearer(world.operator_token()),
    )
    assert created.status_code == 201
    await drain(app_state)
    requests = hook_receiver.wait_for(2)
    assert len(requests) == 2
    assert all(r.json()["data"] == created.json() for r in requests)


async def test_a_redirect_is_a_failed_attempt_never_followed(
    world: World, app_state: AppHarness, hook_receiver: Receiver
) -> None:
    from tests.webhooks.receiver import receiver

    org = world.org()
    with receiver() as elsewhere:
        hook = await subscribe(org, hook_receiver.url)
        hook_receiver.answers = [308]
        hook_receiver.answer_headers = {"location": elsewhere.url}
        await org.create_team()
        once = app_state.settings.model_copy(update={"webhooks_max_attempts": 1})
        await drain(app_state, settings=once)
        assert elsewhere.requests == []
    assert len(hook_receiver.requests) == 1
    [delivery] = (
        await org.client.get(f"/webhook/{hook['Id']}/deliveries", headers=org.admin)
    ).json()
    assert (delivery["Status"], delivery["LastStatusCode"]) == ("Failed", 308)

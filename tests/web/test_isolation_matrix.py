"""The isolation matrix: every route of the application by every kind of caller.

``EXPECTED`` holds, for each (method, path template) of the route table, the status each
caller gets. The route table is read from the application itself, so a route added
without an entry here fails ``test_every_route_has_an_entry``: decide who may call it
first. After the matrix ran, the owner's organization must read exactly as before.

Callers: ``anonymous`` (no token), ``forged`` (a well-formed token signed with another
key), ``stranger`` (another organization's admin), ``member`` (the owner's
organization's member), ``operator`` (platform staff, no organization) and, as the
positive control that shows each request is well-formed, ``admin`` (the owner's admin,
run on a separate organization so that its changes do not touch the snapshot).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
import jwt
import pytest
from fastapi import FastAPI

from questline.app import outbox_consumers
from questline.config import Settings
from questline.storage import tenancy
from questline.storage.db import Database
from questline.webhooks.dispatcher import Dispatcher
from tests.factories import Org, World, bearer, unique
from tests.support.routes import route_table
from tests.web.seeding import seed_organization

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(migrated_settings: Settings) -> Settings:
    """Streams end at once (the walk includes ``GET /leaderboard/stream``); the public
    address is set, as single sign-on and xAPI need it (their routes answer 503 without)."""
    return migrated_settings.model_copy(
        update={"stream_max_seconds": 0.05, "public_url": "https://questline.test"}
    )


CALLERS = ("anonymous", "forged", "stranger", "member", "operator")
_NO_SSO_ORG = "0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b31"
"""An organization without single sign-on (the browser's routes name one in the path)."""
Body = Callable[["Resolved"], Any] | None


@dataclass(frozen=True)
class Expect:
    statuses: dict[str, int]
    body: Body = None
    snapshot: bool = False
    """A GET of the owner's data that must read the same before and after."""
    forbidden_text: bool = True
    """The owner's ids must not appear in what other callers get."""
    extra: dict[str, str] = field(default_factory=dict)
    """Query string for the request, e.g. ``force=true`` on a deletion."""
    fill: dict[str, str] = field(default_factory=dict)
    """Fixed values for path parameters that are not ids (a mounted file's name)."""


def public(status: int = 200, **fill: str) -> Expect:
    """Health, metrics, docs and the dashboard's files: anyone, no organization data."""
    return Expect(dict.fromkeys((*CALLERS, "admin"), status), forbidden_text=False, fill=fill)


def read(*, scoped: bool, operator: int = 403, snapshot: bool = True) -> Expect:
    """Member reads. ``scoped``: the path names one of the owner's resources."""
    return Expect(
        {
            "anonymous": 401,
            "forged": 401,
            "stranger": 404 if scoped else 200,
            "member": 200,
            "operator": operator,
            "admin": 200,
        },
        snapshot=snapshot,
    )


def write(
    status: int,
    *,
    scoped: bool,
    body: Body = None,
    stranger: int | None = None,
    operator: int = 403,
    extra: dict[str, str] | None = None,
) -> Expect:
    """Admin writes. Unscoped ones (``POST /team``) act in the stranger's own organization."""
    return Expect(
        {
            "anonymous": 401,
            "forged": 401,
            "stranger": stranger or (404 if scoped else status),
            "member": 403,
            "operator": operator,
            "admin": status,
        },
        body=body,
        extra=extra or {},
    )


def admin_read(*, scoped: bool) -> Expect:
    """Admin-only reads (webhooks): members get 403 like on a write."""
    return Expect(
        {
            "anonymous": 401,
            "forged": 401,
            "stranger": 404 if scoped else 200,
            "member": 403,
            "operator": 403,
            "admin": 200,
        },
        snapshot=True,
    )


PUBLIC_HOOK = "https://93.184.215.14/hook"
"""A public address (no DNS needed): private ones are refused by default."""
OTHER_HOOK = "https://93.184.215.15/elsewhere"
"""What other callers subscribe (not the owner's values, which must not leak)."""


OTHER_LRS = "https://93.184.215.15/xAPI"
OWNER_PLATFORM = "https://93.184.215.14"
OTHER_PLATFORM = "https://93.184.215.15"


def _lti_platform(base: str) -> dict[str, Any]:
    """A registration on public addresses (private ones are refused by default)."""
    return {
        "Issuer": base,
        "ClientId": unique("iso-client"),
        "DeploymentIds": [unique("iso-deployment")],
        "AuthLoginUrl": f"{base}/auth",
        "AuthTokenUrl": f"{base}/token",
        "KeySetUrl": f"{base}/jwks",
    }


_ADMIN_OWN_LRS = {
    "anonymous": 401,
    "forged": 401,
    "stranger": 404,
    "member": 403,
    "operator": 403,
    "admin": 200,
}
"""The owner's LRS is seeded (``_seed_lrs``); the stranger has none when it reads."""


_LEARNERS = {
    "anonymous": 401,
    "forged": 401,
    "stranger": 404,
    "member": 403,
    "operator": 403,
}
"""A team's members act on it; a member token that names none of them is refused."""


def _new_member(_: Resolved) -> dict[str, str]:
    return {"email": f"{unique('iso')}@example.org", "givenName": "Iso"}


def _discipline_in_owner_org(resolved: Resolved) -> dict[str, str]:
    """Naming the owner's organization: others may not create inside it."""
    return {"Title": unique("Iso"), "Description": "x", "OrganizationId": resolved.org_id}


def scim_only(**fill: str) -> Expect:
    """``/scim/v2``: a directory's ``scim`` token only, refused to every caller here, the
    owner's admin included (tests/scim checks the scim token and its tenancy)."""
    return Expect(
        {"anonymous": 401, "forged": 401, "stranger": 403, "member": 403, "operator": 403,
         "admin": 403},
        fill=fill,
    )  # fmt: skip


_SCIM_ID = "0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b30"


def _season_body() -> dict[str, str]:
    """A season frozen now (started yesterday, frozen a minute ago, ending tomorrow)."""
    now = dt.datetime.now(dt.UTC)

    def iso(at: dt.datetime) -> str:
        return at.isoformat().replace("+00:00", "Z")

    return {
        "Name": unique("Iso season"),
        "StartsAt": iso(now - dt.timedelta(days=1)),
        "FreezesAt": iso(now - dt.timedelta(minutes=1)),
        "EndsAt": iso(now + dt.timedelta(days=1)),
    }


def _ui_asset() -> str:
    from questline.dashboard.endpoints import ASSETS_DIR

    return next(p.name for p in sorted(ASSETS_DIR.iterdir()) if p.is_file())


EXPECTED: dict[tuple[str, str], Expect] = {
    # Operations (no authentication).
    ("GET", "/"): public(307),
    ("GET", "/healthz"): public(),
    ("GET", "/readyz"): public(),
    # The whole process's figures: platform staff only (closed by default).
    ("GET", "/metrics"): Expect(
        {
            "anonymous": 401,
            "forged": 401,
            "stranger": 403,
            "member": 403,
            "operator": 200,
            "admin": 403,
        }
    ),
    ("GET", "/openapi.json"): public(),
    ("GET", "/docs"): public(),
    ("*", "/docs-assets/{path}"): public(path="favicon-32x32.png"),
    ("GET", "/ui"): public(307),
    ("GET", "/ui/"): public(),
    ("*", "/ui/assets/{path}"): public(path=_ui_asset()),
    ("GET", "/problems"): public(),
    ("GET", "/problems/{slug}"): public(slug="conflict"),
    # The dashboard's session: the cookie alone counts (bearer tokens never open or read
    # one here), so every caller without a session cookie gets 401.
    ("GET", "/auth/session"): Expect(dict.fromkeys((*CALLERS, "admin"), 401)),
    ("POST", "/auth/session"): Expect(
        dict.fromkeys((*CALLERS, "admin"), 401), body=lambda _: {"Code": "no-such-code"}
    ),
    ("DELETE", "/auth/session"): Expect(dict.fromkeys((*CALLERS, "admin"), 401)),
    # Teams.
    ("GET", "/team"): read(scoped=False),
    ("POST", "/team"): write(201, scoped=False, body=lambda _: {"name": unique("Iso")}),
    ("POST", "/team/bulk"): write(201, scoped=False, body=lambda _: [{"name": unique("Iso")}]),
    ("GET", "/team/{team_id}"): read(scoped=True),
    ("PATCH", "/team/{team_id}"): write(200, scoped=True, body=lambda _: {"Tags": ["changed"]}),
    ("DELETE", "/team/{team_id}"): write(204, scoped=True),
    ("GET", "/team/{team_id}/members"): read(scoped=True),
    ("POST", "/team/{team_id}/members"): write(201, scoped=True, body=_new_member),
    ("DELETE", "/team/{team_id}/members/{member_id}"): write(204, scoped=True),
    ("POST", "/team/{team_id}/isadminteam"): write(200, scoped=True),
    ("POST", "/team/{team_id}/survey"): write(200, scoped=True),
    # Members.
    ("GET", "/member"): read(scoped=False),
    ("GET", "/member/{member_id}"): read(scoped=True),
    # Disciplines: the owner's organization's own (global ones are the operator's).
    ("GET", "/discipline"): read(scoped=False, operator=200),
    ("POST", "/discipline"): write(201, scoped=False, body=_discipline_in_owner_org, stranger=403),
    ("GET", "/discipline/{discipline_id}"): read(scoped=True, operator=404),
    ("PUT", "/discipline/{discipline_id}"): write(
        200, scoped=True, body=lambda r: r.discipline_document, operator=404
    ),
    ("DELETE", "/discipline/{discipline_id}"): write(
        204, scoped=True, operator=404, extra={"force": "true"}
    ),
    # Progress.
    ("POST", "/team/{team_id}/progress"): write(
        201, scoped=True, body=lambda r: {"TaskId": r.open_task_id}
    ),
    ("GET", "/team/{team_id}/progress"): read(scoped=True),
    ("GET", "/team/{team_id}/progress/{task_id}"): read(scoped=True),
    ("DELETE", "/team/{team_id}/progress/{task_id}"): write(204, scoped=True),
    ("GET", "/team/{team_id}/overview"): read(scoped=True),
    # Learners acting (tests/learners): the matrix's member token names no member (403);
    # the seeded tasks are Admin tasks without hints (422 to the owner's admin).
    ("POST", "/team/{team_id}/attempts"): Expect(
        {**_LEARNERS, "admin": 422}, body=lambda r: {"TaskId": r.open_task_id, "Answer": "x"}
    ),
    ("GET", "/team/{team_id}/attempts"): Expect({**_LEARNERS, "admin": 200}, snapshot=True),
    ("POST", "/team/{team_id}/hints"): Expect(
        {**_LEARNERS, "admin": 422}, body=lambda r: {"TaskId": r.open_task_id, "Index": 0}
    ),
    ("GET", "/team/{team_id}/hints"): Expect({**_LEARNERS, "admin": 200}, snapshot=True),
    # Leaderboard and graphs.
    ("GET", "/leaderboard"): read(scoped=False),
    ("GET", "/leaderboard/graph"): read(scoped=False),
    ("GET", "/leaderboard/stream"): read(scoped=False, snapshot=False),
    ("GET", "/team/{team_id}/graph"): read(scoped=True),
    # Webhooks (admin only, reads too).
    ("POST", "/webhook"): write(
        201, scoped=False, body=lambda _: {"url": OTHER_HOOK, "events": ["team.deleted"]}
    ),
    ("GET", "/webhook"): admin_read(scoped=False),
    ("GET", "/webhook/{webhook_id}"): admin_read(scoped=True),
    ("PATCH", "/webhook/{webhook_id}"): write(
        200, scoped=True, body=lambda _: {"Description": "changed"}
    ),
    ("DELETE", "/webhook/{webhook_id}"): write(204, scoped=True),
    ("POST", "/webhook/{webhook_id}/secret"): write(200, scoped=True),
    ("GET", "/webhook/{webhook_id}/deliveries"): admin_read(scoped=True),
    ("POST", "/webhook/{webhook_id}/deliveries/{delivery_id}/retry"): write(202, scoped=True),
    # The organization itself (its name).
    ("GET", "/organization"): read(scoped=False),
    ("PATCH", "/organization"): write(200, scoped=False, body=lambda _: {"Name": unique("Iso")}),
    # E-mail. This app has no SMTP settings: 409 (mail-not-configured) once the caller
    # may ask; a stranger still learns nothing of the owner's member (404).
    ("POST", "/auth/signin-link"): Expect(
        dict.fromkeys((*CALLERS, "admin"), 409),
        body=lambda r: {"OrganizationId": r.org_id, "Email": "iso@example.org"},
    ),
    ("POST", "/member/{member_id}/invite"): write(409, scoped=True),
    # SCIM provisioning (a scim token only) and the admin's way to mint that token.
    ("GET", "/scim/v2/ServiceProviderConfig"): scim_only(),
    ("GET", "/scim/v2/ResourceTypes"): scim_only(),
    ("GET", "/scim/v2/ResourceTypes/{name}"): scim_only(name="User"),
    ("GET", "/scim/v2/Schemas"): scim_only(),
    ("GET", "/scim/v2/Schemas/{schema_id}"): scim_only(schema_id="x"),
    ("POST", "/scim/v2/.search"): scim_only(),
    ("GET", "/scim/v2/Users"): scim_only(),
    ("POST", "/scim/v2/Users"): scim_only(),
    ("GET", "/scim/v2/Users/{user_id}"): scim_only(user_id=_SCIM_ID),
    ("PUT", "/scim/v2/Users/{user_id}"): scim_only(user_id=_SCIM_ID),
    ("PATCH", "/scim/v2/Users/{user_id}"): scim_only(user_id=_SCIM_ID),
    ("DELETE", "/scim/v2/Users/{user_id}"): scim_only(user_id=_SCIM_ID),
    ("GET", "/scim/v2/Groups"): scim_only(),
    ("POST", "/scim/v2/Groups"): scim_only(),
    ("GET", "/scim/v2/Groups/{group_id}"): scim_only(group_id=_SCIM_ID),
    ("PUT", "/scim/v2/Groups/{group_id}"): scim_only(group_id=_SCIM_ID),
    ("PATCH", "/scim/v2/Groups/{group_id}"): scim_only(group_id=_SCIM_ID),
    ("DELETE", "/scim/v2/Groups/{group_id}"): scim_only(group_id=_SCIM_ID),
    ("POST", "/organization/scim-token"): write(201, scoped=False, body=lambda _: {"Days": 1}),
    ("POST", "/organization/scim-tokens"): write(201, scoped=False, body=lambda _: {"Days": 1}),
    ("GET", "/organization/scim-tokens"): admin_read(scoped=False),
    ("DELETE", "/organization/scim-tokens/{token_id}"): write(204, scoped=True),
    # xAPI (admin only): the caller's own organization's LRS; a stranger has none (404)
    # until its PUT (201), which its DELETE then removes.
    ("GET", "/organization/xapi"): Expect(_ADMIN_OWN_LRS, snapshot=True),
    ("GET", "/organization/xapi/failures"): Expect(_ADMIN_OWN_LRS, snapshot=True),
    ("POST", "/organization/xapi/test"): Expect(_ADMIN_OWN_LRS),
    # The answer is the caller's own registration; its ActivityBaseIri is the service's
    # (the same for every organization), which the owner's snapshot also shows.
    ("PUT", "/organization/xapi"): Expect(
        {**_ADMIN_OWN_LRS, "stranger": 201},
        body=lambda _: {"Endpoint": OTHER_LRS, "Token": "t"},
        forbidden_text=False,
    ),
    ("DELETE", "/organization/xapi"): write(204, scoped=False),
    # Single sign-on. The owner has none configured: its admin reads 404; a provider
    # that cannot be fetched is 422. The browser's routes answer every caller alike.
    ("GET", "/organization/sso"): Expect(
        {**admin_read(scoped=False).statuses, "stranger": 404, "admin": 404}
    ),
    ("PUT", "/organization/sso"): write(
        422,
        scoped=False,
        body=lambda _: {"Issuer": "https://127.0.0.1:9/", "ClientId": "c", "ClientSecret": "s"},
    ),
    ("DELETE", "/organization/sso"): Expect(
        {**write(204, scoped=False).statuses, "stranger": 404, "admin": 404}
    ),
    ("GET", "/auth/oidc/callback"): public(303),
    ("GET", "/auth/oidc/session"): public(200),
    ("GET", "/auth/oidc/{organization_id}"): public(404, organization_id=_NO_SSO_ORG),
    ("GET", "/auth/oidc/{organization_id}/login"): public(303, organization_id=_NO_SSO_ORG),
    # LTI (admin only): the caller's own organization's platforms; the owner's is seeded
    # (``_resolve``). A registration's answer names the service's own tool URLs
    # (the same for every organization), which the owner's snapshot also shows.
    ("POST", "/lti/platform"): replace(
        write(201, scoped=False, body=lambda _: _lti_platform(OTHER_PLATFORM)),
        forbidden_text=False,
    ),
    ("GET", "/lti/platform"): admin_read(scoped=False),
    ("GET", "/lti/platform/{platform_id}"): admin_read(scoped=True),
    ("PATCH", "/lti/platform/{platform_id}"): write(
        200, scoped=True, body=lambda _: {"DeploymentIds": [unique("iso-deployment")]}
    ),
    ("DELETE", "/lti/platform/{platform_id}"): write(204, scoped=True),
    # No launch has named the roster service yet: the owner's admin gets 409.
    ("POST", "/lti/platform/{platform_id}/sync"): write(409, scoped=True),
    # The tool's keys, and the browser's way in from a platform: anyone; without a
    # login's parameters, a launch's state or a ticket, a refusal page (400).
    ("GET", "/.well-known/jwks.json"): public(),
    ("GET", "/lti/login"): public(400),
    ("POST", "/lti/login"): public(400),
    ("POST", "/lti/launch"): public(400),
    ("POST", "/lti/deep-link"): public(400),
    ("GET", "/lti/view/{view}"): public(303, view="leaderboard"),
    # Seasons (any role reads them; the owner's season is frozen, so a reveal succeeds).
    ("POST", "/season"): write(201, scoped=False, body=lambda _: _season_body()),
    ("GET", "/season"): read(scoped=False),
    ("GET", "/season/{season_id}"): read(scoped=True),
    ("PATCH", "/season/{season_id}"): write(200, scoped=True, body=lambda _: {"Name": "changed"}),
    ("DELETE", "/season/{season_id}"): write(204, scoped=True),
    ("POST", "/season/{season_id}/reveal"): write(200, scoped=True),
    # Adjustments.
    ("POST", "/team/{team_id}/adjustments"): write(
        201, scoped=True, body=lambda _: {"Points": 5, "Reason": "iso"}
    ),
    ("GET", "/team/{team_id}/adjustments"): read(scoped=True),
    ("GET", "/team/{team_id}/adjustments/{adjustment_id}"): read(scoped=True),
    ("DELETE", "/team/{team_id}/adjustments/{adjustment_id}"): write(204, scoped=True),
    # Submissions: a team's own members submit and read (the matrix's member token names
    # no member, nor does the admin's: 403), admins read and decide; tests/submissions
    # covers a member of the team. The approval goes first: the rejection then finds
    # the submission decided (409).
    ("POST", "/team/{team_id}/submissions"): Expect(
        {
            "anonymous": 401,
            "forged": 401,
            "stranger": 404,
            "member": 403,
            "operator": 403,
            "admin": 403,
        },
        body=lambda resolved: {"TaskId": resolved.ids["review_task_id"], "Text": "iso"},
    ),
    ("GET", "/team/{team_id}/submissions"): admin_read(scoped=True),
    ("GET", "/submission"): admin_read(scoped=False),
    ("GET", "/submission/{submission_id}"): admin_read(scoped=True),
    ("POST", "/submission/{submission_id}/approve"): write(200, scoped=True),
    ("POST", "/submission/{submission_id}/reject"): write(
        409, scoped=True, body=lambda _: {"Comment": "iso"}
    ),
    # The audit log (admin only; each organization sees its own). Its words
    # ("team.created", also a webhook's event) are every organization's, so its text is
    # not compared; tests/audit checks another organization's log shows none of these.
    ("GET", "/audit"): replace(admin_read(scoped=False), snapshot=False, forbidden_text=False),
}
"""Add the routes of disciplines, progress, leaderboard, bulk and the dashboard here as
they land on main (the completeness test names each one that is missing)."""


def _app_routes(app: FastAPI) -> list[tuple[str, str]]:
    return [entry.key for entry in route_table(app)]


async def test_every_route_has_an_entry(app: FastAPI) -> None:
    routes = _app_routes(app)
    missing = [key for key in routes if key not in EXPECTED]
    stale = [key for key in EXPECTED if key not in routes]
    assert not missing, (
        f"routes without an isolation entry: {missing}. Add each to EXPECTED in "
        "tests/web/test_isolation_matrix.py: who may call it and what every "
        "other caller gets."
    )
    assert not stale, f"EXPECTED names routes the app does not have: {stale}"


@dataclass
class Resolved:
    """The owner's ids for each path parameter, and what request bodies need."""

    org_id: str
    ids: dict[str, str]
    open_task_id: str | None = None
    """A task the first team has not completed."""
    discipline_document: Any = None
    """The owner's discipline as read, to send back with ``PUT``."""

    def url(self, expect: Expect, path: str) -> str:
        values = {**self.ids, **expect.fill}
        url = path.format(**{k: v for k, v in values.items() if "{" + k + "}" in path})
        if expect.extra:
            url += "?" + "&".join(f"{k}={v}" for k, v in expect.extra.items())
        return url


async def _seed_webhook(org: Org, resolved: Resolved, db: Database | None) -> None:
    """A webhook with one delivery (fanned out, not sent: no dispatcher runs here;
    without ``db``, no delivery)."""
    hook = await org.client.post(
        "/webhook", json={"url": PUBLIC_HOOK, "events": ["team.created"]}, headers=org.admin
    )
    assert hook.status_code == 201, hook.text
    resolved.ids["webhook_id"] = hook.json()["Id"]
    if db is None:
        return
    await org.create_team()
    settings = Settings(_env_file=None)
    await Dispatcher(settings, db, consumers=outbox_consumers(settings)).fan_out()
    deliveries = await org.client.get(f"/webhook/{hook.json()['Id']}/deliveries", headers=org.admin)
    [delivery] = deliveries.json()
    resolved.ids["webhook_id"] = hook.json()["Id"]
    resolved.ids["delivery_id"] = delivery["Id"]


async def _resolve(
    org: Org, paths: dict[str, Any], db: Database | None = None, settings: Settings | None = None
) -> Resolved:
    seeded = await seed_organization(org, paths, teams=2)
    team_id = seeded.kept["teams"][0]
    detail = await org.client.get(f"/team/{team_id}", headers=org.admin)
    assert detail.status_code == 200, detail.text
    resolved = Resolved(
        org_id=str(org.id), ids={"team_id": team_id, "member_id": detail.json()["Members"][0]["Id"]}
    )
    if seeded.kept.get("disciplines"):
        resolved.ids["discipline_id"] = discipline_id = seeded.kept["disciplines"][0]
        document = await org.client.get(f"/discipline/{discipline_id}", headers=org.admin)
        assert document.status_code == 200, document.text
        resolved.discipline_document = document.json()
    if seeded.kept.get("tasks"):
        resolved.ids["task_id"], resolved.open_task_id = seeded.kept["tasks"][:2]
    if "post" in paths.get("/webhook", {}):
        await _seed_webhook(org, resolved, db)
    if "put" in paths.get("/organization/xapi", {}) and db is not None and settings is not None:
        await _seed_lrs(org, db, settings)
    if "post" in paths.get("/lti/platform", {}):
        platform = await org.client.post(
            "/lti/platform", json=_lti_platform(OWNER_PLATFORM), headers=org.admin
        )
        assert platform.status_code == 201, platform.text
        resolved.ids["platform_id"] = platform.json()["Id"]
    if "post" in paths.get("/organization/scim-tokens", {}):
        token = await org.client.post(
            "/organization/scim-tokens", json={"Label": unique("iso-token")}, headers=org.admin
        )
        assert token.status_code == 201, token.text
        resolved.ids["token_id"] = token.json()["Id"]
    if "post" in paths.get("/season", {}):
        season = await org.client.post("/season", json=_season_body(), headers=org.admin)
        assert season.status_code == 201, season.text
        resolved.ids["season_id"] = season.json()["Id"]
    if "post" in paths.get("/team/{team_id}/adjustments", {}):
        made = await org.client.post(
            f"/team/{team_id}/adjustments", json={"Points": 3, "Reason": "r"}, headers=org.admin
        )
        assert made.status_code == 201, made.text
        resolved.ids["adjustment_id"] = made.json()["Id"]
    if "post" in paths.get("/team/{team_id}/submissions", {}) and settings is not None:
        await _seed_submission(org, resolved, settings)
    return resolved


async def _seed_submission(org: Org, resolved: Resolved, settings: Settings) -> None:
    """A review task and a pending submission of the first team, by one of its members."""
    from questline.auth.tokens import TokenService
    from questline.web.identity import Role

    task = {"Title": "Show your build", "Points": 5, "Check": {"Kind": "Review"}}
    document = {
        "Title": unique("Iso review"),
        "Description": "x",
        "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [task]}]}],
    }
    made = await org.client.post("/discipline", json=document, headers=org.admin)
    assert made.status_code == 201, made.text
    [[[review_task]]] = [[q["Tasks"] for q in level["Quests"]] for level in made.json()["Levels"]]
    resolved.ids["review_task_id"] = review_task["Id"]
    email = f"{unique('iso-learner')}@example.org"
    team_id = resolved.ids["team_id"]
    added = await org.add_member(team_id, email=email)
    assert added.status_code == 201, added.text
    token = TokenService(settings).mint(role=Role.MEMBER, org_id=org.id, subject=email, email=email)
    submitted = await org.client.post(
        f"/team/{team_id}/submissions",
        json={"TaskId": review_task["Id"], "Url": "https://example.org/iso"},
        headers=bearer(token),
    )
    assert submitted.status_code == 201, submitted.text
    resolved.ids["submission_id"] = submitted.json()["Id"]


async def _seed_lrs(org: Org, db: Database, settings: Settings) -> None:
    """An LRS on a loopback address, written directly (the API refuses such endpoints
    here): the connection test then fails fast at the address check, sending nothing."""
    from questline.storage.db import utcnow
    from questline.xapi.models import LrsConnection
    from questline.xapi.sealing import seal

    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with db.session() as session:
            session.add(
                LrsConnection(
                    organization_id=org.id,
                    endpoint="http://127.0.0.1:9/xAPI",
                    username="owner",
                    password=seal(settings, "owner-secret", organization=str(org.id)),
                    created_at=utcnow(),
                    updated_at=utcnow(),
                )
            )


def _forged_token(org: Org) -> str:
    now = dt.datetime.now(dt.UTC)
    claims = {
        "sub": "admin",
        "org": str(org.id),
        "role": "admin",
        "iss": "questline",
        "aud": "questline",
        "iat": now,
        "exp": now + dt.timedelta(hours=1),
    }
    return jwt.encode(claims, "not-the-secret-" + uuid.uuid4().hex, algorithm="HS256")


async def _snapshot(client: httpx.AsyncClient, org: Org, resolved: Resolved) -> dict[str, Any]:
    """Every authenticated GET, as the owner's admin reads it."""
    taken: dict[str, Any] = {}
    for (method, path), expect in EXPECTED.items():
        if method == "GET" and expect.snapshot:
            url = resolved.url(expect, path)
            response = await client.get(url, headers=org.admin)
            assert response.status_code == 200, (url, response.text)
            taken[url] = response.json()
    return taken


def _owner_values(node: Any) -> set[str]:
    """The distinctive strings of the owner's data (ids, names, e-mails)."""
    if isinstance(node, dict):
        return set().union(*(_owner_values(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_owner_values(v) for v in node)) if node else set()
    if isinstance(node, str) and len(node) >= 8 and not node.endswith("Z"):
        return {node}
    return set()


def _order(key: tuple[str, str]) -> tuple[int, int]:
    """Reads first, deletions last, the longest deletion path before shorter ones."""
    method, path = key
    rank = {"GET": 0, "*": 0, "POST": 1, "PUT": 2, "PATCH": 2, "DELETE": 3}.get(method, 1)
    return (rank, -len(path) if method == "DELETE" else 0)


async def _call(
    client: httpx.AsyncClient,
    key: tuple[str, str],
    resolved: Resolved,
    headers: Any,
) -> httpx.Response:
    expect = EXPECTED[key]
    method = "GET" if key[0] == "*" else key[0]
    url = resolved.url(expect, key[1])
    body = expect.body(resolved) if expect.body is not None else None
    return await client.request(method, url, json=body, headers=headers)


async def test_every_caller_gets_its_status_and_the_owner_is_untouched(
    app: FastAPI, world: World
) -> None:
    owner, stranger = world.org(), world.org()
    await stranger.create_team()
    paths = app.openapi()["paths"]
    resolved = await _resolve(owner, paths, world.db, app.state.questline.settings)
    headers = {
        "anonymous": {},
        "forged": bearer(_forged_token(owner)),
        "stranger": stranger.admin,
        "member": owner.member,
        "operator": bearer(world.operator_token()),
    }
    before = await _snapshot(world.client, owner, resolved)
    secrets = _owner_values(before) | {str(owner.id)}

    mismatches: list[str] = []
    leaks: list[str] = []
    for key in sorted(EXPECTED, key=_order):
        expect = EXPECTED[key]
        url = resolved.url(expect, key[1])
        for caller in CALLERS:
            response = await _call(world.client, key, resolved, headers[caller])
            if response.status_code != expect.statuses[caller]:
                mismatches.append(
                    f"{key[0]} {key[1]} as {caller}: {response.status_code} "
                    f"(expected {expect.statuses[caller]}) {response.text[:200]}"
                )
            if caller != "member" and expect.forbidden_text:
                shown = [v for v in secrets if v in response.text and v not in url]
                leaks += [f"{key[0]} {key[1]} as {caller} shows {value!r}" for value in shown]
    assert not mismatches, "\n".join(mismatches)
    assert not leaks, "\n".join(leaks)
    assert await _snapshot(world.client, owner, resolved) == before


async def test_the_owner_admin_succeeds_on_every_route(app: FastAPI, world: World) -> None:
    """The positive control: every request of the matrix is one the owner may make."""
    owner = world.org()
    resolved = await _resolve(owner, app.openapi()["paths"], world.db, app.state.questline.settings)
    failures: list[str] = []
    for key in sorted(EXPECTED, key=_order):
        expect = EXPECTED[key]
        response = await _call(world.client, key, resolved, owner.admin)
        if response.status_code != expect.statuses["admin"]:
            failures.append(f"{key}: {response.status_code} {response.text[:200]}")
    assert not failures, "\n".join(failures)

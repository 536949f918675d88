"""A browser between the third-party platform (tests/support/third_party_lti.py) and the
running tool: it follows their redirects and auto-posting pages. Questline's cookies are
``Secure`` and the tool here is plain http on loopback, so they are carried by hand."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import httpx
from sqlalchemy import func, select

from questline.auth.models import DashboardSession
from questline.storage import tenancy
from tests.factories import Org
from tests.lti.support import login_cookie, set_cookies
from tests.support.harness import AppHarness
from tests.support.live import LiveServer
from tests.support.third_party_lti import ThirdPartyPlatform, auto_post


@dataclass
class Authenticated:
    """What the platform's authentication endpoint answered: the form its page posts to
    the tool, and the login cookie the tool set in this browser."""

    action: str
    fields: dict[str, str]
    cookie: str | None


async def authenticate(
    http: httpx.AsyncClient, platform: ThirdPartyPlatform, tool: LiveServer, *, user: str, link: str
) -> Authenticated:
    """The course page's link (the platform's third-party initiated login), Questline's
    ``/lti/login``, then the platform's authentication endpoint."""
    started = await http.get(f"{platform.base}/start", params={"user": user, "link": link})
    assert started.status_code == 302, started.text
    login_url = started.headers["location"]
    assert login_url.startswith(f"{tool.url}/lti/login?"), login_url
    login = await http.get(login_url)
    assert login.status_code == 302, login.text
    answer = await http.get(login.headers["location"])
    assert answer.status_code == 200, answer.text
    action, fields = auto_post(answer.text)
    return Authenticated(action, fields, login_cookie(login))


async def post(
    http: httpx.AsyncClient, platform: ThirdPartyPlatform, sent: Authenticated
) -> httpx.Response:
    headers = {"Origin": platform.base}
    if sent.cookie is not None:
        headers["Cookie"] = sent.cookie
    return await http.post(sent.action, data=sent.fields, headers=headers)


async def launch(
    http: httpx.AsyncClient, platform: ThirdPartyPlatform, tool: LiveServer, *, user: str, link: str
) -> httpx.Response:
    return await post(
        http, platform, await authenticate(http, platform, tool, user=user, link=link)
    )


def session_cookie(answer: httpx.Response) -> dict[str, str]:
    found = set_cookies(answer)["questline_session"]
    return {"Cookie": found.split(";", 1)[0]}


def on_tool(org: Org, http: httpx.AsyncClient) -> Org:
    """The organization's factories, calling the running tool."""
    return dataclasses.replace(org, client=http)


async def register(org: Org, platform: ThirdPartyPlatform) -> dict[str, object]:
    created = await org.client.post(
        "/lti/platform", json=platform.registration(), headers=org.admin
    )
    assert created.status_code == 201, created.text
    return dict(created.json())


async def sessions(app_state: AppHarness) -> int:
    with tenancy.for_every_organization():
        async with app_state.db.session(write=False) as session:
            return int(
                await session.scalar(select(func.count()).select_from(DashboardSession)) or 0
            )

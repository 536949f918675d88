"""Steps of a launch from the test platform, as a browser takes them."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from questline.lti.flow import LOGIN_COOKIE_PREFIX
from tests.factories import Org
from tests.support.lti_platform import LtiPlatform, form_fields


async def register(org: Org, platform: LtiPlatform, **fields: Any) -> dict[str, Any]:
    response = await org.client.post(
        "/lti/platform", json=platform.registration(**fields), headers=org.admin
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


BROWSER: dict[str, str] = {}
"""The test browser's login cookies, by the ``state`` of their login: what a browser
holds between ``/lti/login`` and the launch the platform's page posts (the test
client's jar keeps ``Secure`` cookies away from plain http)."""


def state_of(location: str) -> str:
    return parse_qs(urlsplit(location).query)["state"][0]


def login_cookie(started: httpx.Response) -> str | None:
    """The ``Cookie`` header of the login cookie ``/lti/login`` set (None: none)."""
    found = [
        header.split(";", 1)[0]
        for header in started.headers.get_list("set-cookie")
        if header.startswith(LOGIN_COOKIE_PREFIX)
    ]
    assert len(found) <= 1, started.headers
    return found[0] if found else None


async def start_login(
    client: httpx.AsyncClient,
    platform: LtiPlatform,
    login_hint: str,
    *,
    target_link_uri: str | None = None,
    deployment_id: str | None = None,
    method: str = "GET",
) -> httpx.Response:
    params = {
        "iss": platform.issuer,
        "login_hint": login_hint,
        "client_id": platform.client_id,
        "lti_message_hint": "resource-link-1",
    }
    if target_link_uri is not None:
        params["target_link_uri"] = target_link_uri
    if deployment_id is not None:
        params["lti_deployment_id"] = deployment_id
    if method == "POST":
        started = await client.post("/lti/login", data=params)
    else:
        started = await client.get("/lti/login", params=params)
    cookie = login_cookie(started) if started.status_code == 302 else None
    if cookie is not None:
        BROWSER[state_of(started.headers["location"])] = cookie
    return started


async def authenticate(location: str) -> dict[str, str]:
    """The browser at the platform's authentication endpoint: the form it auto-posts."""
    async with httpx.AsyncClient(timeout=10) as browser:
        answer = await browser.get(location)
    assert answer.status_code == 200, answer.text
    fields = form_fields(answer.text)
    assert {"id_token", "state"} <= fields.keys(), answer.text
    return fields


SAME_BROWSER = "same-browser"
"""``post_launch``'s default: the cookie the browser kept from the login of the state."""


async def post_launch(
    client: httpx.AsyncClient,
    fields: dict[str, str],
    *,
    origin: str | None,
    cookie: str | None = SAME_BROWSER,
) -> httpx.Response:
    """Post a launch as the browser that started its login does (``cookie=None``: a
    browser without that login's cookie; any other text: that ``Cookie`` header)."""
    headers = {"Origin": origin} if origin is not None else {}
    if cookie == SAME_BROWSER:
        cookie = BROWSER.get(fields.get("state", ""))
    if cookie is not None:
        headers["Cookie"] = cookie
    return await client.post("/lti/launch", data=fields, headers=headers)


async def launch_fields(
    client: httpx.AsyncClient, platform: LtiPlatform, login_hint: str, **login: Any
) -> dict[str, str]:
    """Login at Questline, then authentication at the platform: the launch to post."""
    started = await start_login(client, platform, login_hint, **login)
    assert started.status_code == 302, started.text
    return await authenticate(started.headers["location"])


async def launch(
    client: httpx.AsyncClient,
    platform: LtiPlatform,
    login_hint: str,
    claims: dict[str, Any],
    **overrides: Any,
) -> httpx.Response:
    """The whole way: what the platform signs, login, authentication, launch."""
    deployment_id = overrides.pop("deployment_hint", None)
    platform.launch_as(login_hint, claims, **overrides)
    fields = await launch_fields(client, platform, login_hint, deployment_id=deployment_id)
    return await post_launch(client, fields, origin=platform.origin)


REASON = re.compile(r"<code id=reason>([a-z-]+)</code>")


def refusal(response: httpx.Response) -> str | None:
    """The reason code of a refusal page (None: not one)."""
    assert response.headers["content-type"].startswith("text/html"), response.text
    found = REASON.search(response.text)
    return found.group(1) if found else None


def set_cookies(response: httpx.Response) -> dict[str, str]:
    """The ``Set-Cookie`` headers of a response, by cookie name."""
    return {header.split("=", 1)[0]: header for header in response.headers.get_list("set-cookie")}


def cookie_value(header: str) -> str:
    return header.split(";", 1)[0].split("=", 1)[1]


def with_cookies(response: httpx.Response) -> dict[str, str]:
    """A ``Cookie`` header carrying the cookies ``response`` set (the test client's jar
    keeps ``Secure`` cookies away from plain http)."""
    pairs = [f"{name}={cookie_value(h)}" for name, h in set_cookies(response).items()]
    return {"Cookie": "; ".join(pairs)}


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"

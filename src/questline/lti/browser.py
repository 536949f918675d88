"""The browser's way in from a learning platform: ``/lti/login``, ``/lti/launch``,
``/lti/deep-link`` and the target link URIs ``/lti/view/…``.

These answer a browser inside the platform's iframe: every refusal is a small HTML
page that says what went wrong (``pages.refusal``), never a JSON error and never a 5xx.
Not ``TransactionalRoute``s: nobody is signed in yet, and no transaction stays open
while the platform's keys are fetched. They accept parameters they do not name
(platforms add their own).
"""

from __future__ import annotations

import logging
import uuid
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.background import BackgroundTask

from questline.auth import sessions
from questline.lti import claims as lti
from questline.lti import deep_linking, flow, pages, roster
from questline.lti.framing import (
    FrameAncestors,
    clear_login_cookie,
    set_launch_cookies,
    set_login_cookie,
    usable_origin,
)
from questline.lti.models import LtiPlatform
from questline.lti.platform_keys import key_sets_of
from questline.lti.refusals import LaunchRefused
from questline.storage import tenancy
from questline.web.edge import Edge, at_the_edge
from questline.web.openapi import OWN_ERRORS, problem_responses
from questline.web.state import app_state, made_once

logger = logging.getLogger("questline.lti")

browser_router = APIRouter(prefix="/lti", tags=["lti"])

DASHBOARD = "/ui/"
_PAGE: dict[str, Any] = {"content": {"text/html": {}}}
_REFUSED = {
    "description": "Refused: an HTML page naming the reason (docs/platforms.md, "
    '"Refusals"), 400, 401 or 403.',
    **_PAGE,
}
_BOUNDARY = problem_responses(413, 415, 429, 503)
"""Before the route: a body too large or neither a form nor JSON, the rate limit, a
server at its limit."""
_LOGIN_RESPONSES: dict[int | str, dict[str, Any]] = {
    302: {"description": "To the platform's authentication endpoint (`AuthLoginUrl`)."},
    400: _REFUSED,
    **_BOUNDARY,
}


MAX_FORM_FIELDS = 20
MAX_FIELD = {"id_token": 64 * 1024, "state": 200, "ticket": 200}
"""Longer values are refused as what they fail to be (an unknown state, a malformed
launch), with a page: the lengths ``flow`` and ``claims`` check."""
FORM = "application/x-www-form-urlencoded"


HTML_ERRORS = {OWN_ERRORS: "text/html"}
"""These routes answer their refusals with pages (the shared problem documents are
listed by hand: what the boundary can still send before the route runs)."""


def form_body(fields: dict[str, str], *, required: list[str]) -> dict[str, Any]:
    """The OpenAPI request body of a form the platform's page (or the picker) posts."""
    schema = {
        "type": "object",
        "properties": {
            name: {"type": "string", "maxLength": MAX_FIELD.get(name, 2048), "description": d}
            for name, d in fields.items()
        },
        "required": required,
    }
    body = {"required": True, "content": {FORM: {"schema": schema}}}
    return {"requestBody": body, **HTML_ERRORS}


async def form_of(request: Request) -> dict[str, str]:
    """The fields of an url-encoded form (the first value of each), read within the
    service's body limit; anything else reads as no fields (and is refused for what it
    lacks)."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != FORM:
        return {}
    try:
        body = (await request.body()).decode("utf-8")
        parsed = parse_qs(body, max_num_fields=MAX_FORM_FIELDS, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {name: values[0] for name, values in parsed.items() if values}


def framing_of(request: Request) -> FrameAncestors:
    return made_once(
        request.app.state,
        "lti_framing",
        FrameAncestors,
        lambda: FrameAncestors(app_state(request).signing_secret),
    )


def _public_url(request: Request) -> str:
    found = app_state(request).settings.public_url
    if found is None:
        raise LaunchRefused("not-configured")
    return found


def _refused(refusal: LaunchRefused) -> HTMLResponse:
    logger.info("LTI refused (%s): %s", refusal.reason, refusal)
    return pages.refusal(refusal)


async def _login(request: Request, params: dict[str, str]) -> Response:
    app = app_state(request)
    try:
        public = _public_url(request)
        async with app.db.session(write=True) as session:
            start = await flow.start_login(
                session,
                params=params,
                redirect_uri=f"{public}/lti/launch",
                default_target=f"{public}/lti/view/leaderboard",
                settings=app.settings,
            )
    except LaunchRefused as refusal:
        return _refused(refusal)
    response = RedirectResponse(
        start.redirect_url, status_code=status.HTTP_302_FOUND, headers={"Cache-Control": "no-store"}
    )
    set_login_cookie(
        response, name=start.cookie_name, value=start.cookie_value, max_age=start.max_age
    )
    return response


Text = str | None


@browser_router.get(
    "/login",
    name="lti_login",
    status_code=status.HTTP_302_FOUND,
    summary="Third-party initiated login (GET)",
    response_class=RedirectResponse,
    responses=_LOGIN_RESPONSES,
    openapi_extra=HTML_ERRORS,
)
@at_the_edge(Edge.FORM_BODY)
async def lti_login_get(
    request: Request,
    iss: Annotated[Text, Query(description="The platform's issuer.")] = None,
    login_hint: Annotated[Text, Query(description="The platform's hint of the user.")] = None,
    target_link_uri: Annotated[Text, Query(description="What the launch opens.")] = None,
    lti_message_hint: Annotated[Text, Query(description="Passed back to the platform.")] = None,
    client_id: Annotated[Text, Query(description="Questline's client id there.")] = None,
    lti_deployment_id: Annotated[Text, Query(description="The deployment.")] = None,
) -> Response:
    """The platform starts a launch (OIDC third-party initiated login, LTI 1.3 §5.1.1):
    a login is recorded (its `state` and `nonce`: single-use, expiring after
    `QUESTLINE_LTI_LOGIN_MINUTES`) and the browser sent to the platform's `AuthLoginUrl`.
    An unknown platform is an HTML page with the reason."""
    params = {
        "iss": iss or "",
        "login_hint": login_hint or "",
        "target_link_uri": target_link_uri or "",
        "lti_message_hint": lti_message_hint or "",
        "client_id": client_id or "",
        "lti_deployment_id": lti_deployment_id or "",
    }
    return await _login(request, params)


@browser_router.post(
    "/login",
    status_code=status.HTTP_302_FOUND,
    summary="Third-party initiated login (POST)",
    response_class=RedirectResponse,
    responses=_LOGIN_RESPONSES,
    openapi_extra=form_body(
        {
            "iss": "The platform's issuer.",
            "login_hint": "The platform's hint of the user.",
            "target_link_uri": "What the launch opens.",
            "lti_message_hint": "Passed back to the platform.",
            "client_id": "Questline's client id there.",
            "lti_deployment_id": "The deployment.",
        },
        required=["iss", "login_hint"],
    ),
)
@at_the_edge(Edge.FORM_BODY)
async def lti_login_post(request: Request) -> Response:
    """As `GET /lti/login`, with the parameters in a form (platforms may post them)."""
    return await _login(request, await form_of(request))


def destination(target: str, *, public_url: str, team_ids: list[uuid.UUID]) -> str:
    """The dashboard page a target link URI names (the leaderboard when it names none
    of Questline's views, or names another site)."""
    parts = urlsplit(target)
    if flow.origin_of(target) != flow.origin_of(public_url):
        return f"{DASHBOARD}#/leaderboard"
    if parts.path == "/lti/view/team":
        return f"{DASHBOARD}#/team/{team_ids[0]}" if team_ids else f"{DASHBOARD}#/teams"
    if parts.path == "/lti/view/leaderboard":
        wanted = parse_qs(parts.query).get("discipline", [""])[0]
        try:
            return f"{DASHBOARD}#/leaderboard?discipline={uuid.UUID(wanted)}"
        except ValueError:
            return f"{DASHBOARD}#/leaderboard"
    return f"{DASHBOARD}#/leaderboard"


def _launch_origin(request: Request) -> str | None:
    return usable_origin(request.headers.get("origin"), settings=app_state(request).settings)


@browser_router.post(
    "/launch",
    name="lti_launch",
    status_code=status.HTTP_303_SEE_OTHER,
    summary="The platform's launch (ID token)",
    response_class=RedirectResponse,
    responses={
        200: {"description": "A deep-linking request: the instructor's picker.", **_PAGE},
        303: {
            "description": "Signed in: to the dashboard page the target link URI names, "
            "with the session cookie (`SameSite=None; Secure; Partitioned`)."
        },
        400: _REFUSED,
        401: _REFUSED,
        403: _REFUSED,
        **_BOUNDARY,
    },
    openapi_extra=form_body(
        {
            "id_token": "The platform's signed launch (a JWT).",
            "state": "The login's `state`.",
            "error": "The platform's error instead of a launch (OIDC).",
        },
        required=["state"],
    ),
)
@at_the_edge(Edge.FORM_BODY)
async def lti_launch(request: Request) -> Response:
    """Spend the login's `state` (once, and only with the login's cookie from
    `/lti/login`), verify the ID token with the key set of the registration it belongs
    to (the login's, else the one that registered its deployment): signature, `iss`,
    `aud` (that client id only), `azp`, `exp`, `nonce`, LTI version, message type, and
    a deployment of that registration; only then does its organization count. Find or
    create the member
    (by e-mail, else by the platform's `sub`; instructors and administrators become
    admins, everyone else members) and start the dashboard session, framable by the
    platform only. A deep-linking request opens the picker instead. Every refusal is an
    HTML page with the reason, with no session."""
    app = app_state(request)
    form = await form_of(request)
    id_token, state, error = form.get("id_token"), form.get("state"), form.get("error")
    frame_origin: str | None = None
    launch_origin = _launch_origin(request)
    try:
        public = _public_url(request)
        refusal: LaunchRefused | None = None
        async with app.db.session(write=True) as session:
            try:
                login = await flow.spend_login(
                    session,
                    state=state or "",
                    cookies=dict(request.cookies),
                    launch_origin=launch_origin,
                )
            except LaunchRefused as exc:
                refusal = exc  # raised after the commit: a spent state stays spent
        if error is not None:
            raise LaunchRefused("platform-error", error)
        if refusal is not None:
            raise refusal
        async with app.db.session(write=False) as session:
            verifier = await flow.launch_registration(session, login=login, id_token=id_token or "")
        # The registration's own key set verifies the token; nothing of its
        # organization is used before.
        verified = await lti.verify_launch(
            id_token or "",
            key_set_url=verifier.key_set_url,
            key_sets=key_sets_of(request.app.state),
            issuer=login.issuer,
            client_id=verifier.client_id,
            nonce=login.nonce,
        )
        async with app.db.session(write=True) as session:
            platform = await flow.verified_registration(
                session, login=login, verifier=verifier, verified=verified
            )
            frame_origin = flow.frame_origin_of(platform, launch_origin)
            if verified[lti.MESSAGE_TYPE] == lti.DEEP_LINKING_REQUEST:
                if not lti.is_admin(verified):
                    raise LaunchRefused("not-instructor")
                ticket = await deep_linking.open_ticket(
                    session, platform=platform, verified=verified, frame_origin=frame_origin
                )
                picker = pages.picker(
                    ticket=ticket,
                    action=f"{public}/lti/deep-link",
                    disciplines=await deep_linking.disciplines_of(
                        session, platform.organization_id
                    ),
                    context_title=lti.text_of(
                        lti.object_of(verified, lti.CONTEXT).get("title"), 200
                    ),
                    frame_origin=frame_origin,
                )
                _clear_login(picker, state)
                return picker
            launched = await flow.sign_in(
                session,
                platform=platform,
                verified=verified,
                settings=app.settings,
                previous_cookie=request.cookies.get(sessions.SESSION_COOKIE),
                launch_origin=launch_origin,
            )
    except LaunchRefused as refusal_:
        # Read before the transaction ended: a refusal rolls it back (and expires it).
        refusal_.frame_origin = refusal_.frame_origin or frame_origin
        refused = _refused(refusal_)
        _clear_login(refused, state)
        return refused
    target = lti.text_of(verified.get(lti.TARGET_LINK_URI), 2048) or login.target_link_uri
    response = RedirectResponse(
        destination(target, public_url=public, team_ids=launched.team_ids),
        status_code=status.HTTP_303_SEE_OTHER,
        headers={
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
            # The redirect itself is answered inside the platform's frame too.
            "Content-Security-Policy": pages.frame_only(launched.frame_origin),
        },
    )
    if lti.NRPS in verified and roster.due(launched.platform):
        # After the answer is sent: the person does not wait for the course's roster.
        response.background = BackgroundTask(
            roster.sync_quietly,
            app.db,
            settings=app.settings,
            signing_secret=app.signing_secret(),
            org_id=launched.platform.organization_id,
            platform_id=launched.platform.id,
        )
    set_launch_cookies(
        response,
        grant=launched.grant,
        frame_origin=launched.frame_origin,
        settings=app.settings,
        framing=framing_of(request),
    )
    _clear_login(response, state)
    return response


def _clear_login(response: Response, state: str | None) -> None:
    """The login's cookie is spent with its state."""
    if state and len(state) <= 200:
        clear_login_cookie(response, flow.login_cookie_name(sessions.digest(state)))


@browser_router.post(
    "/deep-link",
    summary="The instructor's pick (deep linking)",
    response_class=HTMLResponse,
    responses={
        200: {
            "description": "A page that posts the signed `LtiDeepLinkingResponse` (`JWT`) "
            "to the platform's `deep_link_return_url`.",
            **_PAGE,
        },
        400: _REFUSED,
        **_BOUNDARY,
    },
    openapi_extra=form_body(
        {
            "ticket": "The picker's one-time ticket.",
            "choice": "`leaderboard`, `discipline` or `team`.",
            "discipline": "The discipline's id (with `discipline`).",
        },
        required=["ticket", "choice"],
    ),
)
@at_the_edge(Edge.FORM_BODY)
async def lti_deep_link(request: Request) -> Response:
    """Spend the picker's ticket (once, within 30 minutes) and answer with the signed
    deep-linking response for the link picked: the leaderboard, a discipline's
    leaderboard, or the learner's own team's progress."""
    app = app_state(request)
    form = await form_of(request)
    ticket, choice, discipline = form.get("ticket"), form.get("choice"), form.get("discipline")
    frame: str | None = None
    try:
        public = _public_url(request)
        async with app.db.session(write=True) as session:
            link = await deep_linking.spend_ticket(session, ticket=ticket or "")
            # The ticket was handed to a launch its organization's platform verified.
            await tenancy.act_for(session, link.organization_id)
            frame = link.frame_origin
            platform = await session.get(LtiPlatform, (link.organization_id, link.platform_id))
            if platform is None:
                raise LaunchRefused("deep-link", "platform removed")
            picked = await deep_linking.pick(
                session, link=link, choice=choice or "", discipline=discipline, public_url=public
            )
            token = await deep_linking.signed_response(
                session,
                link=link,
                platform=platform,
                picked=picked,
                settings=app.settings,
                signing_secret=app.signing_secret(),
            )
    except LaunchRefused as refusal:
        refusal.frame_origin = refusal.frame_origin or frame
        return _refused(refusal)
    return pages.post_back(
        return_url=link.return_url,
        jwt=token,
        frame_origin=link.frame_origin,
        return_origin=flow.origin_of(link.return_url),
    )


@browser_router.get(
    "/view/{view}",
    status_code=status.HTTP_303_SEE_OTHER,
    summary="A target link URI opened outside a launch",
    response_class=RedirectResponse,
    responses={303: {"description": "To the dashboard's page of the view."}},
)
async def lti_view(
    request: Request,
    view: str,
    discipline: Annotated[Text, Query(description="A discipline's leaderboard.")] = None,
) -> Response:
    """The target link URIs Questline hands out name dashboard pages: opened directly
    (a bookmark), they lead there; a launch leads there signed in."""
    public = app_state(request).settings.public_url or ""
    query = f"?discipline={discipline}" if discipline else ""
    target = f"{public}/lti/view/{view}{query}"
    location = destination(target, public_url=public, team_ids=[]) if public else DASHBOARD
    return RedirectResponse(location, status_code=status.HTTP_303_SEE_OTHER)

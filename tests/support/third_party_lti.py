"""A third-party LTI 1.3 platform on loopback: OpenLearning's ``lti1p3platform`` (PyPI,
MIT; tests/support/lti_platform.py is ours, this one is not).

The protocol is the package's: the third-party initiated login it starts
(``OIDCLoginAbstract.initiate_login``), the check of the tool's authentication request
and the launch message it builds and signs (``LTIAdvantageMessageLaunchAbstract``: user,
roles, context, resource link, deep-linking settings, NRPS and AGS claims), the check of
the tool's deep-linking response (``validate_deeplinking_resp``: the tool's key set
fetched from the tool over HTTP), the token endpoint that verifies the tool's client
assertion with that key set (``get_access_token``), and the NRPS and AGS services with
their bearer-token checks (``NamesRoleProvisioningService``,
``AssignmentsGradesService``).

What is here is the glue every platform writes around it: Starlette routes, the request
adapter, the rendering of its service answers as the package's own Django adapter does
(``framework/django/response.py``: a page's ``content`` as the body, its ``next`` as a
``Link`` header), the auto-posting form, and the platform's data (users, roster, line
items, scores). The package's FastAPI adapter cannot be imported: its templates module
imports ``pkg_resources`` (gone with current setuptools) and Jinja2 (undeclared).

Two duties the package leaves to its user are done here, as a real platform does them:
the ``redirect_uri`` of the authentication request must be the registered one (the
package posts the ID token wherever the request says), and ``Forgery`` lets a test make
it sign what an attacker would (a claim changed or dropped, another key, ``alg: none``,
HS256 keyed with the public key) for the Security Framework's negative cases.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import html
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.exceptions import PyJWTError
from lti1p3platform import exceptions as lti_errors
from lti1p3platform.jwt_helper import jwt_encode
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request as LtiRequest
from lti1p3platform.request import TRequest
from lti1p3platform.response import Response as LtiResponse
from lti1p3platform.response import generate_next_link
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import (
    AssignmentsGradesService,
    NamesRoleProvisioningService,
    TPage,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
COURSE = Context(id="course-42", label="SEC-201", title="Phishing drills")


def rsa_pem_pair() -> tuple[str, str]:
    """A private key (PKCS#8 PEM) and its public key (SubjectPublicKeyInfo PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public.decode()


@dataclass
class User:
    sub: str
    roles: list[str]
    name: str | None = None
    email: str | None = None


def in_roster(user_id: str, email: str | None, status: str = "Active") -> dict[str, Any]:
    """A member of the course as the platform's roster (NRPS) lists them."""
    found: dict[str, Any] = {
        "user_id": user_id,
        "status": status,
        "roles": [LEARNER],
        "name": user_id.removesuffix("-sub").title(),
    }
    if email is not None:
        found["email"] = email
    return found


@dataclass
class Link:
    """A placement of the tool in the course: a resource link, or a deep-linking
    request (content selection) when ``deep_linking``."""

    target_link_uri: str | None = None
    resource_link_id: str = "link-1"
    title: str = "Questline"
    deep_linking: bool = False


@dataclass
class Forgery:
    """What an attacker changes in what the package signs (applied after the package set
    every claim, ``iat`` and ``exp`` included)."""

    claims: dict[str, Any] = field(default_factory=dict)
    drop: tuple[str, ...] = ()
    key: str | None = None
    """Sign with this private key (PEM) instead of the platform's."""
    kid: str | None = None
    """The ``kid`` header (default: the package's, the thumbprint of the signing key)."""
    alg: str = "RS256"
    """``none`` (no signature) or ``HS256-public`` (HMAC keyed with the public key PEM)."""


@dataclass
class PlatformData:
    tool_url: str
    client_id: str = "questline-third-party"
    deployment_id: str = "tp-deployment-1"
    private_key: str = ""
    public_key: str = ""
    users: dict[str, User] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)
    forgeries: dict[str, Forgery] = field(default_factory=dict)
    roster: list[dict[str, Any]] = field(default_factory=list)
    line_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    deep_links: list[list[dict[str, Any]]] = field(default_factory=list)
    """The content items of each deep-linking response the package accepted."""
    refused: list[str] = field(default_factory=list)
    """What the platform refused (token requests, service calls, deep-link responses)."""
    lock: threading.Lock = field(default_factory=threading.Lock)


class ForgingRegistration(Registration):
    forgery: Forgery | None = None

    def platform_encode_and_sign(
        self, payload: dict[str, Any], expiration: int | None = None
    ) -> str:
        forgery = self.forgery
        if forgery is None:
            return super().platform_encode_and_sign(payload, expiration=expiration)
        now = int(time.time())
        if expiration:
            payload.update({"iat": now, "exp": now + expiration})
        payload.update(forgery.claims)
        for name in forgery.drop:
            payload.pop(name, None)
        signer = forgery.key or self.get_platform_private_key()
        assert signer is not None
        kid = forgery.kid or Registration.get_jwk(signer).get("kid") or ""
        if forgery.alg == "RS256":
            return jwt_encode(payload, signer, algorithm="RS256", headers={"kid": kid})
        header = {"alg": "none" if forgery.alg == "none" else "HS256", "typ": "JWT", "kid": kid}
        signing_input = f"{_b64(json.dumps(header))}.{_b64(json.dumps(payload))}"
        if forgery.alg == "none":
            return signing_input + "."
        public = (self.get_platform_public_key() or "").encode()
        mac = hmac.new(public, signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


class PlatformConf(LTI1P3PlatformConfAbstract):
    """The platform's registration of the tool (made per request, as the package's
    README does)."""

    def init_platform_config(self, **kwargs: Any) -> None:
        data: PlatformData = kwargs["data"]
        base: str = kwargs["base"]
        tool = data.tool_url
        self._registration = (
            ForgingRegistration()
            .set_iss(base)
            .set_client_id(data.client_id)
            .set_deployment_id(data.deployment_id)
            .set_launch_url(f"{tool}/lti/view/leaderboard")
            .set_deeplink_launch_url(f"{tool}/lti/launch")
            .set_oidc_login_url(f"{tool}/lti/login")
            .set_tool_key_set_url(f"{tool}/.well-known/jwks.json")
            .set_platform_public_key(data.public_key)
            .set_platform_private_key(data.private_key)
        )

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        assert self._registration is not None
        return self._registration


class StarletteRequest(LtiRequest):
    """The package's request abstraction over a Starlette request and its body."""

    def build_metadata(self, request: Any) -> TRequest:
        starlette_request, body = request
        content_type = starlette_request.headers.get("content-type", "")
        form: dict[str, Any] = {}
        payload: Any = None
        if "json" in content_type and body:
            payload = json.loads(body)
        elif content_type.startswith("application/x-www-form-urlencoded"):
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        return {
            "method": starlette_request.method,
            "form_data": form,
            "get_data": dict(starlette_request.query_params),
            "headers": starlette_request.headers,
            "content_type": content_type,
            "path": starlette_request.url.path,
            "json": payload,
        }


def _as_starlette(answer: LtiResponse) -> Response:
    """As the package's ``framework/django/response.wrap_json_resp``."""
    if 200 <= answer.code < 300:
        result = answer.result
        data = result["content"] if isinstance(result, dict) and "content" in result else result
        response = Response(json.dumps(data), answer.code, media_type=answer.media_type)
        if isinstance(result, dict) and result.get("next"):
            response.headers["Link"] = generate_next_link(result["next"])
        return response
    return JSONResponse({"error": answer.message}, answer.code, media_type=answer.media_type)


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> Response:
        return RedirectResponse(url, status_code=302)


def _page(fields: dict[str, str], action: str) -> HTMLResponse:
    """An auto-posting form, as the package's ``launch.html`` template."""
    inputs = "".join(
        f'<input type="hidden" name="{name}" value="{html.escape(value)}" />'
        for name, value in fields.items()
    )
    return HTMLResponse(
        f'<!DOCTYPE html><html><body><form method="POST" action="{html.escape(action)}" '
        f'id="form">{inputs}</form><script>document.getElementById("form").submit();'
        "</script></body></html>"
    )


class Launch(LTIAdvantageMessageLaunchAbstract):
    data: PlatformData
    base: str

    def get_preflight_response(self) -> dict[str, Any]:
        assert isinstance(self._request, Request)
        return dict(self._request.query_params)

    def validate_preflight_response(self, preflight_response: dict[str, Any]) -> None:
        super().validate_preflight_response(preflight_response)
        # The package posts the ID token to whatever redirect_uri the request names;
        # a platform must hold it to the tool's registered redirect URI.
        if preflight_response.get("redirect_uri") != f"{self.data.tool_url}/lti/launch":
            raise lti_errors.PreflightRequestValidationException("redirect_uri")

    def prepare_launch(self, preflight_response: dict[str, Any]) -> None:
        data, base = self.data, self.base
        hint = preflight_response.get("login_hint", "")
        user = data.users[hint]
        link = data.links[preflight_response.get("lti_message_hint", "")]
        self.set_user_data(user.sub, user.roles, full_name=user.name, email_address=user.email)
        self.set_launch_context_claim(
            COURSE.id, context_title=COURSE.title, context_label=COURSE.label
        )
        if link.deep_linking:
            self.set_dl(
                f"{base}/deep-link-return",
                title="Add Questline",
                accept_types={"ltiResourceLink"},
            )
        else:
            self.set_resource_link_claim(link.resource_link_id, title=link.title)
            if link.target_link_uri is not None:
                self.set_launch_url(link.target_link_uri)
        self.set_nrps(f"{base}/memberships")
        self.set_ags(f"{base}/lineitems")
        assert isinstance(self._registration, ForgingRegistration)
        self._registration.forgery = data.forgeries.get(hint)

    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> Response:
        fields = {"id_token": launch_data["id_token"], "state": launch_data["state"]}
        return _page(fields, launch_data["launch_url"])


class Roster(NamesRoleProvisioningService):
    data: PlatformData

    def get_member_data_page(
        self,
        page: int = 1,
        limit: int | None = None,
        role: str | None = None,
        since: str | None = None,
        **_: Any,
    ) -> TPage:
        with self.data.lock:
            return {"content": [dict(m) for m in self.data.roster], "has_next": False}

    def get_context_by_id(self) -> Context:
        return COURSE


class Gradebook(AssignmentsGradesService):
    data: PlatformData
    base: str

    def find_lineitems(
        self,
        page: int = 1,
        limit: int | None = None,
        line_item_id: str | None = None,
        resource_link_id: str | None = None,
        resource_id: str | None = None,
        tag: str | None = None,
    ) -> TPage:
        with self.data.lock:
            items = [
                dict(i)
                for i in self.data.line_items.values()
                if resource_id is None or i.get("resourceId") == resource_id
            ]
        return {"content": items, "has_next": False}

    def find_lineitem(self, line_item_id: str) -> Any:
        with self.data.lock:
            if line_item_id not in self.data.line_items:
                raise lti_errors.LineItemNotFoundException()
            return dict(self.data.line_items[line_item_id])

    def create_lineitem(self, creation_data: Any) -> Any:
        item = {**creation_data, "id": f"{self.base}/lineitems/{uuid.uuid4()}"}
        with self.data.lock:
            self.data.line_items[item["id"]] = item
        return item

    def update_lineitem(self, update_data: Any) -> Any:
        with self.data.lock:
            self.data.line_items[update_data["id"]].update(update_data)
            return dict(self.data.line_items[update_data["id"]])

    def delete_lineitem(self, line_item_id: str) -> None:
        with self.data.lock:
            self.data.line_items.pop(line_item_id, None)

    def update_score(self, line_item_id: str, score: Any) -> UpdateScoreStatus:
        with self.data.lock:
            if line_item_id not in self.data.line_items:
                raise lti_errors.LineItemNotFoundException()
            self.data.scores.append({"lineItem": line_item_id, **score})
        return UpdateScoreStatus.SUCCESS

    def get_results(
        self, line_item_id: str, page: int = 1, limit: int | None = None, user_id: str | None = None
    ) -> TPage:
        with self.data.lock:
            found = [
                {
                    "userId": s["userId"],
                    "resultScore": s.get("scoreGiven"),
                    "resultMaximum": s.get("scoreMaximum"),
                    "scoreOf": line_item_id,
                }
                for s in self.data.scores
                if s["lineItem"] == line_item_id and user_id in (None, s["userId"])
            ]
        return {"content": found, "has_next": False}


SERVICE_REFUSALS = (lti_errors.LtiException, lti_errors.LtiServiceException, PyJWTError)
"""What the package raises for a token it refuses (PyJWT's errors come through)."""


def _app(data: PlatformData, base: str) -> Starlette:
    def conf() -> PlatformConf:
        return PlatformConf(data=data, base=base)

    def refuse(what: str, status: int, exc: Exception) -> JSONResponse:
        with data.lock:
            data.refused.append(f"{what}: {type(exc).__name__}: {exc}")
        return JSONResponse({"error": type(exc).__name__}, status)

    async def jwks(_: Request) -> JSONResponse:
        return JSONResponse(dict(conf().get_jwks()))

    async def start(request: Request) -> Response:
        """The course page's link to the tool: the third-party initiated login."""
        platform = conf()
        login = Login(request, platform)
        hint = request.query_params["link"]
        login.set_lti_message_hint(hint=hint)
        if data.links[hint].deep_linking:
            login.set_deeplinking_launch_url()
        elif (target := data.links[hint].target_link_uri) is not None:
            login.set_launch_url(target)
        answer: Response = login.initiate_login(request.query_params["user"])
        return answer

    async def auth(request: Request) -> Response:
        launch = Launch(request, conf())  # type: ignore[arg-type]
        launch.data, launch.base = data, base
        try:
            answer: Response = launch.lti_launch()
        except lti_errors.PreflightRequestValidationException as exc:
            return refuse("authentication request", 400, exc)
        return answer

    async def token(request: Request) -> Response:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        try:
            return JSONResponse(dict(conf().get_access_token(form)))
        except (
            lti_errors.MissingRequiredClaim,
            lti_errors.UnsupportedGrantType,
            *SERVICE_REFUSALS,
        ) as exc:
            return refuse("token", 401, exc)

    async def adapted(request: Request) -> StarletteRequest:
        return StarletteRequest((request, await request.body()))

    async def memberships(request: Request) -> Response:
        service = Roster(await adapted(request), conf(), f"{base}/memberships")
        service.data = data
        try:
            return _as_starlette(service.handle_resp(service.handle_get_members))
        except SERVICE_REFUSALS as exc:
            return refuse("memberships", 401, exc)

    def gradebook(adapted_request: StarletteRequest) -> Gradebook:
        service = Gradebook(adapted_request, conf(), f"{base}/lineitems")
        service.data, service.base = data, base
        return service

    async def line_items(request: Request) -> Response:
        service = gradebook(await adapted(request))
        handler = (
            service.handle_create_lineitem
            if request.method == "POST"
            else service.handle_get_lineitems
        )
        try:
            return _as_starlette(service.handle_resp(handler))
        except SERVICE_REFUSALS as exc:
            return refuse("lineitems", 401, exc)

    async def scores(request: Request) -> Response:
        service = gradebook(await adapted(request))
        item = f"{base}/lineitems/{request.path_params['item']}"
        try:
            return _as_starlette(
                service.handle_resp(service.handle_update_score, line_item_id=item)
            )
        except SERVICE_REFUSALS as exc:
            return refuse("scores", 401, exc)

    async def deep_link_return(request: Request) -> Response:
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        try:
            items = conf().validate_deeplinking_resp({"JWT": form.get("JWT", "")})
        except (lti_errors.LtiDeepLinkingResponseException, *SERVICE_REFUSALS) as exc:
            return refuse("deep-link response", 400, exc)
        with data.lock:
            data.deep_links.append(items)
        return HTMLResponse("<p>Added to the course.</p>")

    return Starlette(
        routes=[
            Route("/jwks", jwks),
            Route("/start", start),
            Route("/auth", auth),
            Route("/token", token, methods=["POST"]),
            Route("/memberships", memberships),
            Route("/lineitems", line_items, methods=["GET", "POST"]),
            Route("/lineitems/{item}/scores", scores, methods=["POST"]),
            Route("/deep-link-return", deep_link_return, methods=["POST"]),
        ]
    )


class ThirdPartyPlatform:
    """The running platform: tests say who is in the course and what the links are,
    and read what the platform received."""

    def __init__(self, base: str, data: PlatformData) -> None:
        self.base = base
        self.data = data

    @property
    def issuer(self) -> str:
        return self.base

    @property
    def kid(self) -> str:
        """The ``kid`` of the platform's signing key (the package's: its thumbprint)."""
        return str(Registration.get_jwk(self.data.public_key)["kid"])

    def registration(self, **fields: Any) -> dict[str, Any]:
        """The body of Questline's ``POST /lti/platform`` for this platform."""
        return {
            "Issuer": self.issuer,
            "ClientId": self.data.client_id,
            "DeploymentIds": [self.data.deployment_id],
            "AuthLoginUrl": f"{self.base}/auth",
            "AuthTokenUrl": f"{self.base}/token",
            "KeySetUrl": f"{self.base}/jwks",
            **fields,
        }

    def enrol(self, hint: str, user: User) -> None:
        self.data.users[hint] = user

    def place(self, hint: str, link: Link) -> None:
        self.data.links[hint] = link

    def forge(self, hint: str, forgery: Forgery | None) -> None:
        if forgery is None:
            self.data.forgeries.pop(hint, None)
        else:
            self.data.forgeries[hint] = forgery

    def set_roster(self, members: list[dict[str, Any]]) -> None:
        with self.data.lock:
            self.data.roster = list(members)

    def scores(self) -> list[dict[str, Any]]:
        with self.data.lock:
            return list(self.data.scores)


@contextlib.contextmanager
def running_third_party_platform(tool_url: str) -> Iterator[ThirdPartyPlatform]:
    """The platform on a free loopback port, registered with the tool at ``tool_url``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    private, public = rsa_pem_pair()
    data = PlatformData(tool_url=tool_url, private_key=private, public_key=public)
    config = uvicorn.Config(
        _app(data, base), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="lti1p3platform", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the third-party LTI platform did not start")
        time.sleep(0.01)
    try:
        yield ThirdPartyPlatform(base, data)
    finally:
        server.should_exit = True
        thread.join()


FIELD = re.compile(r'name="(\w+)" value="([^"]*)"')
ACTION = re.compile(r'action="([^"]+)"')


def auto_post(page: str) -> tuple[str, dict[str, str]]:
    """Where an auto-posting page of the platform posts, and its fields."""
    found = ACTION.search(page)
    assert found is not None, page
    fields = {name: html.unescape(value) for name, value in FIELD.findall(page)}
    return html.unescape(found.group(1)), fields

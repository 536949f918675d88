"""A learning platform beside the tests: a real LTI 1.3 platform on a loopback port
(a Starlette app served by uvicorn in a thread of the test process), with its own RSA
keys. No mock of the protocol: it issues real signed ID tokens and checks what
Questline sends it with Questline's published keys.

* ``GET /jwks``: its public keys (``KeySetUrl``).
* ``GET /auth``: the OIDC authentication endpoint (``AuthLoginUrl``): checks the
  authentication request (client id, redirect URI, response type and mode, scope,
  prompt), then answers the page a browser would auto-post to the tool: a form with
  the signed ``id_token`` and the ``state``. What the token says is what a test
  prepared for the ``login_hint`` (``launch_as``), the LTI claims of a resource link
  launch by default.
* ``POST /token``: client credentials with a JWT bearer client assertion (LTI
  Security Framework §4.1), verified with the key set the test handed over from
  Questline's ``/.well-known/jwks.json`` (``trust_tool_keys``); answers an access token.
* ``GET /memberships``: the course roster (Names and Role Provisioning Services 2.0),
  paged by ``limit`` with RFC 8288 ``Link: <…>; rel="next"``.
* ``GET|POST /lineitems``, ``POST /lineitems/{id}/scores``: Assignment and Grade
  Services 2.0 line items and scores, kept for the test to read.

This platform is built on joserfc and on nothing of Questline's; it lets the tests
page the roster and script every claim. A platform we did not write, OpenLearning's
``lti1p3platform``, runs the same flows against the running service
(tests/support/third_party_lti.py).
"""

from __future__ import annotations

import contextlib
import copy
import html
import re
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
AGS_SCOPES = (
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
)
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def _key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256"}, private=True)


@dataclass
class Launch:
    """What the platform signs for one login hint."""

    claims: dict[str, Any]
    key: RSAKey | None = None
    """Sign with this key instead of the platform's (a forged launch)."""


@dataclass
class PlatformState:
    client_id: str = "questline-tool"
    deployment_id: str = "deployment-1"
    redirect_uri: str = ""
    key: RSAKey = field(default_factory=lambda: _key("platform-key-1"))
    tool_keys: dict[str, Any] | None = None
    launches: dict[str, Launch] = field(default_factory=dict)
    roster: list[dict[str, Any]] = field(default_factory=list)
    page_size: int = 2
    """Roster members per page at most, whatever ``limit`` asks (to make pages)."""
    line_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)
    """Access tokens issued, with their scopes."""
    assertions: list[dict[str, Any]] = field(default_factory=list)
    """The client assertions the token endpoint accepted (their claims)."""
    lock: threading.Lock = field(default_factory=threading.Lock)


class LtiPlatform:
    """The running platform; tests prepare launches and read what it received."""

    def __init__(self, base: str, state: PlatformState) -> None:
        self.base = base
        self.state = state

    @property
    def issuer(self) -> str:
        return self.base

    @property
    def origin(self) -> str:
        return self.base

    @property
    def client_id(self) -> str:
        return self.state.client_id

    @property
    def deployment_id(self) -> str:
        return self.state.deployment_id

    def registration(self, **fields: Any) -> dict[str, Any]:
        """The body of ``POST /lti/platform`` for this platform."""
        return {
            "Issuer": self.issuer,
            "ClientId": self.client_id,
            "DeploymentIds": [self.deployment_id],
            "AuthLoginUrl": f"{self.base}/auth",
            "AuthTokenUrl": f"{self.base}/token",
            "KeySetUrl": f"{self.base}/jwks",
            **fields,
        }

    def trust_tool_keys(self, key_set: dict[str, Any], redirect_uri: str) -> None:
        """Register the tool: its key set (as Questline publishes it) and redirect URI."""
        self.state.tool_keys = key_set
        self.state.redirect_uri = redirect_uri

    def claims_for(
        self,
        sub: str,
        *,
        email: str | None = None,
        roles: list[str] | None = None,
        message_type: str = "LtiResourceLinkRequest",
        target_link_uri: str | None = None,
        context_title: str = "Security awareness 2026",
    ) -> dict[str, Any]:
        claims: dict[str, Any] = {
            "sub": sub,
            "given_name": "Ada",
            "name": "Ada Lovelace",
            LTI + "version": "1.3.0",
            LTI + "message_type": message_type,
            LTI + "deployment_id": self.deployment_id,
            LTI + "roles": roles if roles is not None else [LEARNER],
            LTI + "context": {"id": "course-1", "label": "SEC-101", "title": context_title},
            LTI + "resource_link": {"id": "link-1", "title": "Leaderboard"},
        }
        if email is not None:
            claims["email"] = email
        if target_link_uri is not None:
            claims[LTI + "target_link_uri"] = target_link_uri
        if message_type == "LtiDeepLinkingRequest":
            claims.pop(LTI + "resource_link")
            claims[DL_CLAIM] = {
                "deep_link_return_url": f"{self.base}/deep-link-return",
                "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"],
                "data": "opaque-platform-data",
            }
        return claims

    def launch_as(
        self,
        login_hint: str,
        claims: dict[str, Any],
        *,
        drop: tuple[str, ...] = (),
        key: RSAKey | None = None,
        **overrides: Any,
    ) -> None:
        """What the next authentication request for ``login_hint`` gets signed: the
        claims (``aud``, ``exp``… may be overridden; ``drop`` leaves claims out)."""
        prepared = copy.deepcopy(claims) | overrides
        for name in drop:
            prepared.pop(name, None)
        self.state.launches[login_hint] = Launch(prepared, key)

    def other_key(self, *, same_kid: bool) -> RSAKey:
        """A key the platform does not publish (with its published kid, or another)."""
        return _key(self.state.key.kid if same_kid and self.state.key.kid else "forger")

    def nrps_claim(self) -> dict[str, Any]:
        return {
            NRPS_CLAIM: {
                "context_memberships_url": f"{self.base}/memberships",
                "service_versions": ["2.0"],
            }
        }

    def ags_claim(self) -> dict[str, Any]:
        return {
            AGS_CLAIM: {
                "scope": list(AGS_SCOPES),
                "lineitems": f"{self.base}/lineitems",
            }
        }

    def set_roster(self, members: list[dict[str, Any]]) -> None:
        with self.state.lock:
            self.state.roster = list(members)

    def scores(self) -> list[dict[str, Any]]:
        with self.state.lock:
            return list(self.state.scores)


def _sign(state: PlatformState, claims: dict[str, Any], key: RSAKey | None) -> str:
    signer = key or state.key
    return jwt.encode({"alg": "RS256", "kid": signer.kid or "", "typ": "JWT"}, claims, signer)


def _problem(status: int, error: str) -> JSONResponse:
    return JSONResponse({"error": error}, status_code=status)


def _app(state: PlatformState, base: list[str]) -> Starlette:
    async def jwks(_: Request) -> JSONResponse:
        return JSONResponse({"keys": [state.key.as_dict(private=False)]})

    async def auth(request: Request) -> Response:
        q = request.query_params
        checks = {
            "scope": "openid",
            "response_type": "id_token",
            "response_mode": "form_post",
            "prompt": "none",
            "client_id": state.client_id,
            "redirect_uri": state.redirect_uri,
        }
        for name, wanted in checks.items():
            if q.get(name) != wanted:
                return _problem(400, f"invalid_request: {name}")
        if not q.get("state") or not q.get("nonce"):
            return _problem(400, "invalid_request: state and nonce")
        launch = state.launches.get(q.get("login_hint", ""))
        if launch is None:
            return _problem(400, "login_required")
        now = int(time.time())
        claims = {
            "iss": base[0],
            "aud": state.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": q["nonce"],
        } | launch.claims
        token = _sign(state, claims, launch.key)
        page = (
            f"<form method=post action='{html.escape(state.redirect_uri)}'>"
            f"<input type=hidden name=id_token value='{token}'>"
            f"<input type=hidden name=state value='{html.escape(q['state'])}'>"
            "</form><script>document.forms[0].submit()</script>"
        )
        return HTMLResponse(page)

    def _bearer_scopes(request: Request) -> set[str] | None:
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return None
        scopes = state.tokens.get(header[7:])
        return None if scopes is None else set(scopes.split())

    async def token(request: Request) -> Response:
        # Parsed by hand: Starlette's form parser needs python-multipart, which
        # nothing else here needs.
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        if form.get("grant_type") != "client_credentials":
            return _problem(400, "unsupported_grant_type")
        if form.get("client_assertion_type") != CLIENT_ASSERTION_TYPE:
            return _problem(400, "invalid_client")
        if state.tool_keys is None:
            return _problem(401, "invalid_client: no tool keys")
        try:
            decoded = jwt.decode(
                str(form.get("client_assertion", "")),
                KeySet.import_key_set(state.tool_keys),
                algorithms=["RS256"],
            )
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": state.client_id},
                sub={"essential": True, "value": state.client_id},
                aud={"essential": True, "value": f"{base[0]}/token"},
                exp={"essential": True},
                jti={"essential": True},
            ).validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            return _problem(401, f"invalid_client: {type(exc).__name__}")
        access = secrets.token_urlsafe(24)
        scope = str(form.get("scope", ""))
        with state.lock:
            state.tokens[access] = scope
            state.assertions.append(dict(decoded.claims))
        return JSONResponse(
            {"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": scope}
        )

    async def memberships(request: Request) -> Response:
        scopes = _bearer_scopes(request)
        if scopes is None or NRPS_SCOPE not in scopes:
            return _problem(401, "invalid_token")
        limit = min(int(request.query_params.get("limit", "100")), state.page_size)
        offset = int(request.query_params.get("offset", "0"))
        with state.lock:
            page = state.roster[offset : offset + limit]
            more = offset + limit < len(state.roster)
        headers = {}
        if more:
            headers["Link"] = (
                f'<{base[0]}/memberships?limit={limit}&offset={offset + limit}>; rel="next"'
            )
        body = {
            "id": f"{base[0]}/memberships",
            "context": {"id": "course-1", "title": "Security awareness 2026"},
            "members": page,
        }
        return JSONResponse(
            body,
            headers=headers,
            media_type="application/vnd.ims.lti-nrps.v2.membershipcontainer+json",
        )

    async def line_items(request: Request) -> Response:
        scopes = _bearer_scopes(request)
        if scopes is None or AGS_SCOPES[0] not in scopes:
            return _problem(401, "invalid_token")
        if request.method == "POST":
            item = await request.json()
            item_id = f"{base[0]}/lineitems/{uuid.uuid4()}"
            item["id"] = item_id
            with state.lock:
                state.line_items[item_id] = item
            return JSONResponse(
                item, status_code=201, media_type="application/vnd.ims.lis.v2.lineitem+json"
            )
        wanted = request.query_params.get("resource_id")
        with state.lock:
            items = [
                i
                for i in state.line_items.values()
                if wanted is None or i.get("resourceId") == wanted
            ]
        return JSONResponse(items, media_type="application/vnd.ims.lis.v2.lineitemcontainer+json")

    async def scores(request: Request) -> Response:
        scopes = _bearer_scopes(request)
        if scopes is None or AGS_SCOPES[1] not in scopes:
            return _problem(401, "invalid_token")
        item_id = f"{base[0]}/lineitems/{request.path_params['item']}"
        if item_id not in state.line_items:
            return _problem(404, "not_found")
        score = await request.json()
        with state.lock:
            state.scores.append({"lineItem": item_id, **score})
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/jwks", jwks),
            Route("/auth", auth),
            Route("/token", token, methods=["POST"]),
            Route("/memberships", memberships),
            Route("/lineitems", line_items, methods=["GET", "POST"]),
            Route("/lineitems/{item}/scores", scores, methods=["POST"]),
        ]
    )


@contextlib.contextmanager
def running_platform() -> Iterator[LtiPlatform]:
    """A platform on a free loopback port, for the block's duration."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = [f"http://127.0.0.1:{port}"]
    state = PlatformState()
    config = uvicorn.Config(
        _app(state, base), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="lti-platform", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the test LTI platform did not start")
        time.sleep(0.01)
    try:
        yield LtiPlatform(base[0], state)
    finally:
        server.should_exit = True
        thread.join()


FORM_FIELD = re.compile(r"name=(\w+) value='([^']*)'")


def form_fields(page: str) -> dict[str, str]:
    """The hidden fields of an auto-posting page (the platform's, or Questline's)."""
    return {name: html.unescape(value) for name, value in FORM_FIELD.findall(page)}

"""Authentication: which tokens get in, which get a 401, and the identity-provider modes."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import http.server
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from sqlalchemy import select

from questline.app import create_app
from questline.auth.tokens import TokenService, load_or_create_secret
from questline.config import Settings
from questline.organizations.models import Organization
from questline.web.identity import Role
from tests.factories import World, bearer

pytestmark = pytest.mark.anyio


def _claims(**overrides: object) -> dict[str, object]:
    now = dt.datetime.now(dt.UTC)
    claims: dict[str, object] = {
        "sub": "someone",
        "org": str(uuid.uuid4()),
        "role": "admin",
        "iss": "questline",
        "aud": "questline",
        "iat": now,
        "exp": now + dt.timedelta(hours=1),
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def _secret(settings: Settings) -> str:
    return (settings.data_dir / "jwt-secret").read_text().strip()


def _forged_none_token() -> str:
    import base64

    def b64(data: dict[str, object]) -> str:
        raw = json.dumps(data, default=str).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    claims = _claims(iat=None, exp=int(dt.datetime.now(dt.UTC).timestamp()) + 3600)
    return f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64(claims)}."


async def test_rejected_tokens_get_401_with_www_authenticate(
    world: World, settings: Settings
) -> None:
    secret = _secret(settings)
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)
    cases = {
        "garbage": "not.a.jwt",
        "alg none": _forged_none_token(),
        "expired": jwt.encode(_claims(iat=past, exp=past + dt.timedelta(minutes=5)), secret),
        "not yet valid": jwt.encode(
            _claims(nbf=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)), secret
        ),
        "wrong audience": jwt.encode(_claims(aud="someone-else"), secret),
        "wrong issuer": jwt.encode(_claims(iss="evil"), secret),
        "wrong secret": jwt.encode(_claims(), "x" * 48),
        "no organization": jwt.encode(_claims(org=None), secret),
        "unknown role": jwt.encode(_claims(role="root"), secret),
        "no expiry": jwt.encode(_claims(exp=None), secret),
    }
    no_token = await world.client.get("/team")
    assert no_token.status_code == 401
    assert no_token.headers["WWW-Authenticate"].startswith("Bearer")
    for name, token in cases.items():
        response = await world.client.get("/team", headers=bearer(token))
        assert response.status_code == 401, name
        assert response.headers["content-type"] == "application/problem+json", name
        assert response.headers["WWW-Authenticate"].startswith("Bearer"), name
    basic = await world.client.get("/team", headers={"Authorization": "Basic dXNlcjpwdw=="})
    assert basic.status_code == 401


async def test_valid_token_creates_its_organization_once(world: World) -> None:
    org = world.org()
    for _ in range(2):
        response = await world.client.get("/team", headers=org.member)
        assert response.status_code == 200
    async with world.db.session(write=False) as session:
        ids = list(await session.scalars(select(Organization.id)))
    assert ids == [org.id]


async def test_member_token_is_refused_on_every_write(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    member = (await org.add_member(team["Id"])).json()
    writes = [
        ("POST", "/team", {"name": "x"}),
        ("PATCH", f"/team/{team['Id']}", {"Name": "y"}),
        ("DELETE", f"/team/{team['Id']}", None),
        ("POST", f"/team/{team['Id']}/members", {"email": "a@b.org", "givenName": "A"}),
        ("DELETE", f"/team/{team['Id']}/members/{member['Id']}", None),
        ("POST", f"/team/{team['Id']}/isadminteam", None),
        ("POST", f"/team/{team['Id']}/survey", None),
    ]
    before = await org.teams()
    for method, path, body in writes:
        response = await world.client.request(method, path, json=body, headers=org.member)
        assert response.status_code == 403, (method, path)
    assert await org.teams() == before


async def test_operator_token_has_no_organization_for_team_endpoints(world: World) -> None:
    response = await world.client.get("/team", headers=bearer(world.operator_token()))
    assert response.status_code == 403


def test_minting_refuses_inconsistent_roles(settings: Settings) -> None:
    tokens = TokenService(settings)
    with pytest.raises(ValueError, match="operator"):
        tokens.mint(role=Role.OPERATOR, org_id=uuid.uuid4())
    with pytest.raises(ValueError, match="organization"):
        tokens.mint(role=Role.ADMIN, org_id=None)


def test_secret_is_generated_once_and_reused(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, _env_file=None)  # type: ignore[call-arg]
    first = TokenService(settings)
    token = first.mint(role=Role.MEMBER, org_id=uuid.uuid4())
    second = TokenService(settings)
    assert second.verify(token).role is Role.MEMBER
    assert (tmp_path / "jwt-secret").stat().st_mode & 0o777 == 0o600


def test_processes_starting_at_once_agree_on_one_whole_secret(tmp_path: Path) -> None:
    """Every concurrent caller gets the same, complete secret (never a half-written file)."""
    settings = Settings(data_dir=tmp_path, _env_file=None)  # type: ignore[call-arg]
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        found = list(pool.map(lambda _: load_or_create_secret(settings), range(64)))
    assert len(set(found)) == 1
    assert len(found[0]) >= 64
    assert found[0] == _secret(settings)
    assert [p.name for p in tmp_path.iterdir()] == ["jwt-secret"]  # no scratch files left


def _pem_public(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


async def _get_teams(settings: Settings, token: str) -> int:
    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        status = (await client.get("/team", headers=bearer(token))).status_code
    await app.state.questline.db.dispose()
    return status


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
async def test_identity_provider_public_key(settings: Settings, algorithm: str) -> None:
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
    if algorithm == "RS256":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        key = ec.generate_private_key(ec.SECP256R1())
    idp = settings.model_copy(
        update={
            "jwt_algorithms": [algorithm],
            "jwt_public_key": _pem_public(key),
            "jwt_issuer": "https://idp.example",
            "jwt_audience": "questline-api",
        }
    )
    good = jwt.encode(
        _claims(iss="https://idp.example", aud="questline-api"), key, algorithm=algorithm
    )
    assert await _get_teams(idp, good) == 200
    wrong_issuer = jwt.encode(_claims(aud="questline-api"), key, algorithm=algorithm)
    assert await _get_teams(idp, wrong_issuer) == 401
    hs_forgery = jwt.encode(_claims(iss="https://idp.example", aud="questline-api"), "k" * 48)
    assert await _get_teams(idp, hs_forgery) == 401


@pytest.fixture
def jwks_server() -> Iterator[tuple[str, rsa.RSAPrivateKey]]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": "k1", "use": "sig", "alg": "RS256"})
    body = json.dumps({"keys": [jwk]}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json", key
    finally:
        server.shutdown()


async def test_identity_provider_jwks(
    settings: Settings, jwks_server: tuple[str, rsa.RSAPrivateKey]
) -> None:
    url, key = jwks_server
    idp = settings.model_copy(
        update={"jwt_algorithms": ["RS256"], "jwt_jwks_url": url, "jwt_issuer": None}
    )
    token = jwt.encode(_claims(iss=None), key, algorithm="RS256", headers={"kid": "k1"})
    assert await _get_teams(idp, token) == 200
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(_claims(iss=None), other, algorithm="RS256", headers={"kid": "k1"})
    assert await _get_teams(idp, forged) == 401

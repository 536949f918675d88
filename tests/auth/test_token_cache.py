"""The cache of verified tokens: a look-up instead of a signature check, never past ``exp``."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from questline.auth import tokens as tokens_module
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.web.errors import Unauthorized
from questline.web.identity import Role


def _service(tmp_path: Path) -> TokenService:
    return TokenService(Settings(_env_file=None, data_dir=tmp_path, jwt_leeway_seconds=0))  # type: ignore[call-arg]


def test_a_verified_token_is_remembered_until_it_expires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _service(tmp_path)
    org = uuid.uuid4()
    token = service.mint(role=Role.MEMBER, org_id=org, lifetime=dt.timedelta(minutes=5))
    first = service.verify(token)
    assert first.org_id == org

    calls: list[str] = []
    original = service._decode

    def counting(raw: str, key: object) -> object:
        calls.append(raw)
        return original(raw, key)

    monkeypatch.setattr(service, "_decode", counting)
    assert service.verify(token) == first
    assert calls == []  # remembered: no signature check

    # Past its exp the remembered entry is dropped: the token is checked again.
    later = dt.datetime.now(dt.UTC).timestamp() + 3600
    monkeypatch.setattr(tokens_module, "time", SimpleNamespace(time=lambda: later))
    service.verify(token)
    assert calls == [token]


def test_rotated_keys_forget_every_verified_token(tmp_path: Path) -> None:
    service = _service(tmp_path)
    token = service.mint(role=Role.ADMIN, org_id=uuid.uuid4())
    service.verify(token)
    assert token in service._verified
    service.keys_rotated()
    assert token not in service._verified


def test_the_cache_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens_module, "VERIFIED_TOKENS", 3)
    service = _service(tmp_path)
    minted = [service.mint(role=Role.MEMBER, org_id=uuid.uuid4()) for _ in range(5)]
    for token in minted:
        service.verify(token)
    assert list(service._verified) == minted[2:]


def test_an_invalid_token_is_never_remembered(tmp_path: Path) -> None:
    service = _service(tmp_path)
    token = service.mint(role=Role.MEMBER, org_id=uuid.uuid4()) + "x"
    with pytest.raises(Unauthorized):
        service.verify(token)
    assert token not in service._verified

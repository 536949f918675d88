"""``questline token create --email``: a token that names the organization's member the
caller is (its ``email`` claim)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.web.identity import Role

ORG = "00000000-0000-0000-0000-0000000000a2"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "questline.cli.main", "token", "create", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "QUESTLINE_DATA_DIR": str(tmp_path)},
        check=False,
    )


def test_a_token_with_an_email_names_the_member(tmp_path: Path) -> None:
    done = _run(tmp_path, "--org", ORG, "--role", "member", "--email", "Ada@Example.org")
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip().splitlines()[-1]
    settings = Settings(data_dir=tmp_path, _env_file=None)  # type: ignore[call-arg]
    caller = TokenService(settings).verify(token)
    assert caller.role is Role.MEMBER
    assert caller.email == "Ada@Example.org"

    without = _run(tmp_path, "--org", ORG, "--role", "member")
    assert TokenService(settings).verify(without.stdout.strip().splitlines()[-1]).email is None


def test_an_email_is_refused_where_no_member_can_be_named(tmp_path: Path) -> None:
    operator = _run(tmp_path, "--role", "operator", "--email", "ada@example.org")
    assert operator.returncode != 0
    assert "--email" in operator.stderr
    not_an_address = _run(tmp_path, "--org", ORG, "--role", "member", "--email", "ada")
    assert not_an_address.returncode != 0

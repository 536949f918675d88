"""The commands that print links for a person (``demo``, ``signin-link``) say so when
``QUESTLINE_PUBLIC_URL`` is unset and they guess the address; with it set, they use it
and say nothing."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from questline.cli.main import GUESSED_PUBLIC_URL
from questline.cli.main import app as cli
from questline.demo.loader import DEMO_ORG_ID

WARNING = "QUESTLINE_PUBLIC_URL is not set"


def test_printed_links_use_the_public_url_or_warn_that_they_guess(tmp_path: Path) -> None:
    unset: dict[str, str | None] = {
        "QUESTLINE_DATA_DIR": str(tmp_path / "data"),
        "QUESTLINE_DATABASE_URL": None,
        "QUESTLINE_PUBLIC_URL": None,
    }
    runner = CliRunner()
    demo = runner.invoke(cli, ["demo"], env=unset)
    assert demo.exit_code == 0, demo.output
    assert WARNING in demo.stderr
    assert GUESSED_PUBLIC_URL in demo.stderr
    assert f"API docs:     {GUESSED_PUBLIC_URL}/docs" in demo.stdout
    assert f"dashboard:    {GUESSED_PUBLIC_URL}/ui/#code=" in demo.stdout

    guessed = runner.invoke(cli, ["signin-link", "--org", str(DEMO_ORG_ID)], env=unset)
    assert guessed.exit_code == 0, guessed.output
    assert WARNING in guessed.stderr
    assert guessed.stdout.strip().splitlines()[-1].startswith(f"{GUESSED_PUBLIC_URL}/ui/#code=")

    public = {**unset, "QUESTLINE_PUBLIC_URL": "https://questline.example.org/"}
    named = runner.invoke(cli, ["signin-link", "--org", str(DEMO_ORG_ID)], env=public)
    assert named.exit_code == 0, named.output
    assert WARNING not in named.stderr
    last = named.stdout.strip().splitlines()[-1]
    assert last.startswith("https://questline.example.org/ui/#code=")

    wrong = {**unset, "QUESTLINE_PUBLIC_URL": "questline.example.org"}
    refused = runner.invoke(cli, ["signin-link", "--org", str(DEMO_ORG_ID)], env=wrong)
    assert refused.exit_code != 0

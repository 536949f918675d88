"""The API document tells the whole truth: ``st run`` from the repository's root, against a
live ``questline serve`` loaded with ``questline demo``, reports no failure.

This is the run docs/api.md describes ("The API document, checked"), with its
configuration read from the repository's ``schemathesis.toml`` (every check, every phase,
stateful included; the few rules no schema can express named there, operation by
operation), against the deployment ``make run`` starts: the embedded default (SQLite).
Only the number of examples an operation is smaller here
(``QUESTLINE_SCHEMATHESIS_EXAMPLES``, default 5; the documented run takes 15), and the
seed is fixed so that a failure can be run again. Every operation meets the same checks
on PostgreSQL too, in process (``test_fuzz.py``, both backends, stateful phase included).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.live import LiveServer, questline_command

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("QUESTLINE_SCHEMATHESIS_EXAMPLES", "5"))
SEED = os.environ.get("QUESTLINE_SCHEMATHESIS_SEED", "26")


def schemathesis_command() -> list[str]:
    script = Path(sys.executable).with_name("st")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "schemathesis.cli"]


@dataclass
class Deployment:
    server: LiveServer
    token: str


def _environment(root: Path) -> dict[str, str]:
    return {
        "QUESTLINE_DATA_DIR": str(root / "data"),
        # A run sends a few thousand requests a minute: the limiter would answer most of
        # them 429 (documented, so no failure, but nothing behind it would be tested).
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_LOG_LEVEL": "WARNING",
        # As `make run` configures the demo: a public address (single sign-on's redirect
        # URI, LTI's tool URLs, xAPI's IRIs) and e-mail written to the console.
        "QUESTLINE_PUBLIC_URL": "https://questline.test",
        "QUESTLINE_SMTP_URL": "console:",
        "QUESTLINE_MAIL_FROM": "Questline demo <questline@localhost>",
        # schemathesis reads a response whole: a live stream would be held until its
        # request timeout (10 s, some sixty seconds of a run). Ended after half a second,
        # a stream's whole answer (its events, its end) is checked against the document.
        "QUESTLINE_STREAM_MAX_SECONDS": "0.5",
    }


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """``questline demo`` (migrates, loads the demo organization, prints its admin token
    last), then ``questline serve`` on a free port: what a user does (README)."""
    root = tmp_path_factory.mktemp("schemathesis")
    env = _environment(root)
    demo = subprocess.run(
        [*questline_command(), "demo"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    token = demo.stdout.strip().splitlines()[-1]
    server = LiveServer(env=env, log_path=root / "server.log").start()
    try:
        yield Deployment(server=server, token=token)
    finally:
        server.stop()


def test_schemathesis_from_the_repository_root_finds_no_failure(deployment: Deployment) -> None:
    argv = [
        *schemathesis_command(),
        "run",
        f"{deployment.server.url}/openapi.json",
        "--max-examples",
        str(EXAMPLES),
        "--seed",
        SEED,
        "--no-color",
    ]
    env = {**os.environ, "QUESTLINE_TOKEN": deployment.token}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-20000:]
    # Its summary: every generated case passed (none failed, none errored).
    counts = re.search(r"(\d+) generated, (\d+) passed(?:, \d+ skipped)?\n", report)
    assert counts is not None, report[-20000:]
    assert counts.group(1) == counts.group(2), report[-20000:]
    assert int(counts.group(1)) > 1000  # every operation was reached, in every phase


def test_the_configuration_is_the_repositorys_own() -> None:
    """The plain ``st run`` reads ``schemathesis.toml`` at the root; nothing in it turns a
    check or a phase off, and the only allowances it makes are per operation."""
    import tomllib

    config = tomllib.loads((ROOT / "schemathesis.toml").read_text())
    assert config["generation"]["max-examples"] == 15
    # Globally, only more ways to reject invalid data (the server's 414 and 431).
    assert set(config.get("checks", {})) <= {"negative_data_rejection"}
    rejections = config["checks"]["negative_data_rejection"]["expected-statuses"]
    assert {"414", "431"} <= set(rejections)
    assert not {"2xx", "200", "201"} & set(rejections)
    assert "phases" not in config
    assert config["auth"]["openapi"]["bearer"]["bearer"] == "${QUESTLINE_TOKEN}"
    for operation in config.get("operations", []):
        assert set(operation) <= {"include-operation-id", "checks"}, operation
        for name, check in operation["checks"].items():
            assert check.get("enabled", True), (operation, name)

"""Property-based fuzzing of every operation of the service's own OpenAPI document.

Schemathesis generates valid and invalid requests for each operation and sends them
through the real ASGI stack, authenticated as the admin of an organization that has
teams and members (ids in paths are drawn from them, so requests reach the code behind
the 404). Every response must be free of 5xx and match the document: status code,
content type, headers and body schema.

The operations are read from the application's own document, so routes that land later
are fuzzed without a change here. Bounded: ``QUESTLINE_FUZZ_EXAMPLES`` examples of valid
and as many of invalid data an operation, on each backend; by default the project's depth,
``generation.max-examples`` of ``schemathesis.toml`` (the documented ``st run``'s).

(Schemathesis' own pytest integration, ``from_fixture``, does not run on pytest 9.2:
it sets ``Node._nodeid``, which pytest 9.2 no longer has; so the test drives its
Hypothesis strategies directly.)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation
from schemathesis.python import asgi as schemathesis_asgi

from questline.app import create_app
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.web.identity import Role
from tests.conftest import BACKENDS, migrated_for
from tests.factories import World, bearer
from tests.support.database import empty_all_tables
from tests.support.harness import AppHarness
from tests.web.seeding import Seeded, seed_organization


def _configured_examples() -> int:
    """``generation.max-examples`` of the repository's ``schemathesis.toml``."""
    config = tomllib.loads((Path(__file__).parents[2] / "schemathesis.toml").read_text())
    return int(config["generation"]["max-examples"])


FUZZ_EXAMPLES = int(os.environ.get("QUESTLINE_FUZZ_EXAMPLES") or _configured_examples())
ACCEPTABLE_FOR_VALID_DATA = ["2xx", "303", "401", "403", "404", "409", "412", "422", "429"]
"""What schema-valid data may get. 412 and 422 are semantic refusals that a schema cannot
express: an ``If-Match`` that is not the current ``ETag``, an ``after`` cursor that this
service did not issue, member ids that are well-formed but not in the organization. 303
is the browser's single sign-on routes' only answer (a refused login goes to the sign-in
page, never a JSON error; no other operation documents a 303)."""
BROWSER_PAGES = ["ltiLogin", "ltiLoginPost", "ltiLaunch", "ltiDeepLink"]
"""The browser's way in from a learning platform: schema-valid data that names no
registered platform, login state or ticket is refused with a page (400), never JSON."""
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {"positive_data_acceptance": {"expected-statuses": ACCEPTABLE_FOR_VALID_DATA}},
        "operations": [
            {
                "include-operation-id": BROWSER_PAGES,
                "checks": {
                    "positive_data_acceptance": {
                        "expected-statuses": [*ACCEPTABLE_FOR_VALID_DATA, "400"]
                    }
                },
            }
        ],
    }
)
HTTP_METHODS = ("get", "put", "post", "delete", "patch")


def _operations() -> list[tuple[str, str]]:
    """(METHOD, path) of every operation in the document, read at collection time."""
    with tempfile.TemporaryDirectory() as data_dir:
        app = create_app(Settings(data_dir=data_dir, _env_file=None))  # type: ignore[call-arg]
        paths = app.openapi()["paths"]
    return [(m.upper(), p) for p, item in paths.items() for m in HTTP_METHODS if m in item]


async def _seed(settings: Settings) -> Seeded:
    """Seed through a throwaway app on this event loop (the fuzzed app gets its own)."""
    app = create_app(settings)
    try:
        await empty_all_tables(AppHarness(app))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://seed.test") as client:
            state = AppHarness(app)
            world = World(client=client, tokens=state.tokens, db=state.db)
            return await seed_organization(world.org(), app.openapi()["paths"])
    finally:
        await app.state.questline.db.dispose()


def _with_seeded_ids(seeded: Seeded, operation: Any, generated: dict[str, Any]) -> Any:
    """Each path id: the generated value, or one of the organization's real ids. A value
    that breaks its documented ``format: uuid`` is a negative case's point and is kept:
    a real id laid over it would send a valid request that the case says is not."""
    if not isinstance(generated, dict) or not generated:
        return st.just(generated)
    method = operation.method.upper()
    names = list(generated)
    uuid_named = {
        parameter.name
        for parameter in operation.path_parameters
        if parameter.definition.get("schema", {}).get("format") == "uuid"
    }
    strategies: dict[str, st.SearchStrategy[Any]] = {}
    for name, value in generated.items():
        pool = seeded.pool(name, deleting=method == "DELETE" and names == [name])
        if not pool or (name in uuid_named and not _is_uuid(value)):
            strategies[name] = st.just(value)
        else:
            strategies[name] = st.sampled_from(pool) | st.just(value)
    return st.fixed_dictionaries(strategies)


def _is_uuid(value: Any) -> bool:
    """The ``uuid`` format as JSON Schema validators read it (hyphens where RFC 9562 puts
    them)."""
    if not isinstance(value, str) or len(value) != 36:
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return all(value[position] == "-" for position in (8, 13, 18, 23))


def _sent_as_drawn(case: Any) -> bool:
    """A negative case whose headers are negated is sent with its own headers: laying the
    admin's token over them would replace a negated ``Authorization`` (a malformed or a
    missing credential) with a valid one, and send a request the case says it is not.
    Such a case must be refused (401 at least)."""
    return bool(case.meta.is_negative_at(ParameterLocation.HEADER))


@dataclass
class FuzzTarget:
    backend: str
    schema: Any
    seeded: Seeded
    tokens: TokenService


FUZZ_SETTINGS: dict[str, Any] = {
    # Rate limits on but raised: the limiter runs on every request without hiding
    # operations behind 429s (as it did at the default limits).
    "rate_limit_enabled": True,
    "rate_limit_reads": "1000000/minute",
    "rate_limit_writes": "1000000/minute",
    "rate_limit_bulk": "1000000/minute",
    "stream_max_seconds": 0.05,
    # E-mail configured (queued, never sent: no sender runs), so that the mail routes
    # answer their 2xx rather than 409 (mail-not-configured).
    "smtp_url": "smtp://127.0.0.1:9",
    "mail_from": "Questline <questline@example.org>",
    "public_url": "https://questline.test",
    "mail_dispatcher_enabled": False,
}


def _target(backend: str, migrated: Settings) -> FuzzTarget:
    settings = migrated.model_copy(update=FUZZ_SETTINGS)
    seeded = anyio.run(_seed, settings)
    app = create_app(settings)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=CONFIG)

    @schema.hook
    def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any]) -> Any:
        return _with_seeded_ids(seeded, context.operation, path_parameters)

    return FuzzTarget(backend, schema, seeded, TokenService(settings))


@pytest.fixture(scope="module")
def fuzz_targets(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[list[FuzzTarget]]:
    """One seeded organization and app on each backend, shared by the operations: state
    that earlier operations leave behind (renamed, archived, flagged teams) is fuzzed too;
    deletions draw from their own pool so that the kept ids keep resolving."""
    try:
        yield [
            _target(backend, migrated_for(backend, tmp_path_factory, request))
            for backend in BACKENDS
        ]
    finally:
        schemathesis_asgi.shutdown_lifespans()  # disposes the apps' database pools


def _same_resources(first: Seeded, other: Seeded) -> dict[str, str]:
    """Each seeded id of ``first`` → the id of ``other`` seeded in its place (both are
    seeded by the same calls, in the same order)."""
    same: dict[str, str] = {}
    for pools, others in ((first.kept, other.kept), (first.doomed, other.doomed)):
        for name, ids in pools.items():
            assert len(ids) == len(others[name]), name
            same.update(zip(ids, others[name], strict=True))
    return same


def _swapped(value: Any, same: dict[str, str]) -> Any:
    """A seeded id's counterpart; anything else (a generated value, of any type) as it is."""
    return same.get(value, value) if isinstance(value, str) else value


@contextlib.contextmanager
def _on(target: FuzzTarget) -> Iterator[None]:
    """A failure names the backend it happened on."""
    try:
        yield
    except BaseException as failure:
        failure.add_note(f"(on {target.backend})")
        raise


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path"), _operations(), ids=lambda v: str(v))
def test_operation_keeps_its_documented_promises(
    fuzz_targets: list[FuzzTarget], method: str, path: str
) -> None:
    """Each case is drawn once, from the first backend's document, and sent to every
    backend (its seeded ids swapped for the ones seeded in their place there): drawing
    costs several times what the requests do, and the backends answer the same cases."""
    first, *others = fuzz_targets
    operation = first.schema[path][method]
    swaps = [(other, _same_resources(first.seeded, other.seeded)) for other in others]
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @settings(
        max_examples=2 * FUZZ_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def fuzz(case: Any) -> None:
        as_drawn = _sent_as_drawn(case)
        drawn = dict(case.path_parameters or {})
        with _on(first):
            case.call_and_validate(headers=None if as_drawn else first.seeded.org.admin)
        for other, same in swaps:
            if drawn:
                case.path_parameters = {k: _swapped(v, same) for k, v in drawn.items()}
            app = other.schema.app
            with _on(other):
                case.call_and_validate(
                    headers=None if as_drawn else other.seeded.org.admin, app=app
                )
        if drawn:
            case.path_parameters = drawn

    fuzz()


def test_every_schemathesis_check_is_enabled() -> None:
    """``--checks all``: ``call_and_validate`` runs the checks the configuration enables;
    every check schemathesis has must be among them (none turned off here)."""
    load_all_checks()
    config = CONFIG.projects.get_default().checks_config_for(operation=None, phase=None)
    names = [check.__name__ for check in CHECKS.get_all()]
    assert "allow_header_conformance" in names
    assert "positive_data_acceptance" in names
    disabled = [name for name in names if not getattr(config, name).enabled]
    assert disabled == []


STATEFUL_STEPS = int(os.environ.get("QUESTLINE_FUZZ_STATEFUL_STEPS", "25"))


@pytest.mark.slow
def test_stateful_sequences_keep_their_documented_promises(
    fuzz_targets: list[FuzzTarget],
) -> None:
    """The stateful phase: sequences of calls chained through the document's links (ids a
    response returns fed into the next request), every response checked with all of
    schemathesis' checks, as ``schemathesis run --checks all`` does in its stateful phase;
    on each backend."""
    for target in fuzz_targets:
        with _on(target):
            _run_state_machine(target)


def _run_state_machine(target: FuzzTarget) -> None:
    tokens = target.tokens
    base = target.schema.as_state_machine()

    class Machine(base):  # type: ignore[misc, valid-type]
        """Each example acts in an organization of its own: the sequences hypothesis
        generates must not depend on what earlier examples left in the database (a name
        taken by an earlier example turns a 201 into a 409 and changes which rules can
        run next, which hypothesis reports as inconsistent data generation)."""

        def __init__(self) -> None:
            super().__init__()
            self.headers = bearer(
                tokens.mint(role=Role.ADMIN, org_id=uuid.uuid4(), subject="fuzz-admin")
            )

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            # As in the single operations: a case about a missing credential is sent
            # without the example's token.
            return {"headers": None if _sent_as_drawn(case) else self.headers}

    Machine.run(
        settings=settings(
            max_examples=FUZZ_EXAMPLES,
            stateful_step_count=STATEFUL_STEPS,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )

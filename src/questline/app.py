"""The application factory."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from asgi_correlation_id import CorrelationIdMiddleware
from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.routing import iter_route_contexts

from questline import __version__
from questline.adjustments.endpoints import router as adjustments_router
from questline.audit import service as audit_service
from questline.audit.endpoints import router as audit_router
from questline.auth.authentication import Identity
from questline.auth.endpoints import router as auth_router
from questline.auth.tokens import TokenService, load_or_create_secret
from questline.background import cancel_and_wait
from questline.bulk.endpoints import router as bulk_router
from questline.config import Settings
from questline.dashboard import endpoints as dashboard
from questline.dashboard.endpoints import mount_dashboard
from questline.disciplines.endpoints import router as disciplines_router
from questline.disciplines.service import TasksRemovedHook
from questline.events import fanout
from questline.health.endpoints import router as health_router
from questline.leaderboard.caller_view import season_rank
from questline.leaderboard.endpoints import router as leaderboard_router
from questline.learners.endpoints import router as learners_router
from questline.lti import grades_consumer as lti_grades_consumer
from questline.lti.browser import browser_router as lti_browser_router
from questline.lti.endpoints import keys_router as lti_keys_router
from questline.lti.endpoints import router as lti_router
from questline.lti.endpoints import sync_router as lti_sync_router
from questline.lti.framing import FrameAncestors
from questline.lti.grades_dispatcher import GradesDispatcher
from questline.mail import service as mail_service
from questline.mail.dispatcher import Postman
from questline.mail.endpoints import invite_router as mail_invite_router
from questline.mail.endpoints import signin_router as mail_signin_router
from questline.members.endpoints import router as members_router
from questline.organizations.endpoints import router as organizations_router
from questline.progress import hooks as progress_hooks
from questline.progress.endpoints import router as progress_router
from questline.progress.group_commit import GroupCommit
from questline.progress.season_rank import SeasonRank
from questline.readmodel.service import ReadModel
from questline.scim.endpoints import router as scim_router
from questline.scim.endpoints import token_router as scim_token_router
from questline.scim.errors import ScimErrorMiddleware
from questline.seasons.endpoints import router as seasons_router
from questline.sso.endpoints import browser_router as sso_browser_router
from questline.sso.endpoints import rate_limited as sso_rate_limited
from questline.sso.endpoints import router as sso_router
from questline.storage.db import Database
from questline.submissions.endpoints import router as submissions_router
from questline.teams.endpoints import router as teams_router
from questline.web import idempotency
from questline.web.admission import Admission, ConcurrencyLimitMiddleware
from questline.web.allowed_hosts import AllowedHostsMiddleware
from questline.web.application import Application
from questline.web.edge import Edge, EdgePipeline, EdgeStep, EdgeTable
from questline.web.error_handlers import CrashGuardMiddleware, install_error_handlers
from questline.web.fastlane import FastLane
from questline.web.hardening import (
    RequestTimeoutMiddleware,
    SecurityHeadersMiddleware,
    ShutdownStep,
    drain,
    run_shutdown,
)
from questline.web.head import HeadAsGetMiddleware
from questline.web.middleware import AccessLogMiddleware, BodyGuardMiddleware
from questline.web.openapi import install_openapi, mount_docs
from questline.web.problems import router as problems_router
from questline.web.ratelimit import RateLimiter, RateLimitMiddleware
from questline.web.routing import let_concrete_paths_win
from questline.web.state import AppState
from questline.webhooks import dispatcher as webhook_deliveries
from questline.webhooks.dispatcher import Dispatcher
from questline.webhooks.endpoints import router as webhooks_router
from questline.xapi import consumer as xapi_consumer
from questline.xapi.dispatcher import Dispatcher as XapiDispatcher
from questline.xapi.endpoints import router as xapi_router

DESCRIPTION = """
Questline keeps an organization's **teams** of members and its learning **disciplines**
(levels → quests → tasks, with resources), reports each team's **progress**, and ranks
teams on a **leaderboard** with **progress graphs**, leaving admin teams out.

Every operation but health and docs needs `Authorization: Bearer <JWT>`.
Errors are RFC 9457 problem documents (`application/problem+json`).
"""

SHUTDOWN_STEP_SECONDS = 30.0
"""The most one step of the shutdown may take (a dispatcher's stop, the queued progress
writes, the pool's close) before the next one runs anyway."""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    mail_service.check_settings(settings)  # a mistyped SMTP URL stops the start, not a send
    db = Database(settings)
    identity = Identity(TokenService(settings), db=db)
    state = AppState(
        settings=settings,
        db=db,
        authenticate=identity.authenticate,
        signing_secret=lambda: load_or_create_secret(settings),
    )
    readmodel = ReadModel(db, settings)
    consumers = outbox_consumers(settings)
    listeners = fanout.Listeners.of(consumers)
    db.give_sessions(fanout.LISTENERS, listeners)  # events.record asks them
    progress_writes = GroupCommit(
        db, gather_window=settings.progress_gather_window_ms / 1000, listeners=listeners
    )
    xapi_dispatchers: list[XapiDispatcher] = []
    grades_dispatchers: list[GradesDispatcher] = []

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Before anything serves: the row-security setting must match the database's
        # roles (``Database.check_row_security``; docs/deploy.md, "Two database roles").
        await state.db.check_row_security(settings)
        dispatcher = (
            Dispatcher(settings, state.db, consumers=consumers)
            if settings.webhooks_dispatcher_enabled
            else None
        )
        if dispatcher is not None:
            dispatcher.start()
        postman = (
            Postman(settings, state.db)
            if settings.mail_dispatcher_enabled and not mail_service.missing_settings(settings)
            else None
        )
        if postman is not None:
            postman.start()
        if settings.xapi_dispatcher_enabled:
            xapi_dispatchers.append(XapiDispatcher(settings, state.db))
            xapi_dispatchers[-1].start()
        if settings.lti_grades_dispatcher_enabled:
            grades_dispatchers.append(GradesDispatcher(settings, state.db, state.signing_secret))
            grades_dispatchers[-1].start()
        purger = asyncio.get_running_loop().create_task(
            idempotency.purge_periodically(state.db, state.settings)
        )
        audit_purger = asyncio.get_running_loop().create_task(
            audit_service.purge_periodically(state.db, state.settings)
        )
        try:
            yield
        finally:
            steps: list[ShutdownStep] = [
                ("idempotency purge", lambda: cancel_and_wait(purger)),
                ("audit purge", lambda: cancel_and_wait(audit_purger)),
            ]
            if dispatcher is not None:
                steps.append(("webhook dispatcher", dispatcher.stop))
            if postman is not None:
                steps.append(("mail dispatcher", postman.stop))
            steps += [("xAPI dispatcher", d.stop) for d in xapi_dispatchers]
            steps += [("LTI grades dispatcher", d.stop) for d in grades_dispatchers]
            steps += [
                ("timed-out requests", lambda: drain(state.cancelled_requests, grace=10)),
                ("progress writes", progress_writes.close),
                ("database pool", state.db.dispose),
            ]
            await run_shutdown(steps, grace=SHUTDOWN_STEP_SECONDS)

    app = Application(
        title="Questline",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        telemetry={
            "tracing": settings.opentelemetry,
            "metrics": settings.opentelemetry,
            "logs": settings.opentelemetry,
        },
    )
    app.state.questline = state
    app.state.identity = identity
    app.state.readmodel = readmodel
    app.state.progress_writes = progress_writes
    app.state.outbox_consumers = consumers
    # What a domain calls in one built on it, handed down (typed here, read by its accessor).
    tasks_removed: TasksRemovedHook = progress_hooks.before_tasks_removed  # their progress first
    app.state.tasks_removed = tasks_removed
    ranked_in_season: SeasonRank = season_rank  # the overview's ?season=, as the leaderboard
    app.state.season_rank = ranked_in_season
    app.state.lti_framing = FrameAncestors(state.signing_secret)
    install_error_handlers(app)
    for router in (
        health_router,
        auth_router,
        bulk_router,  # before the teams router's /team/{team_id} routes
        teams_router,
        members_router,
        disciplines_router,
        progress_router,
        learners_router,
        leaderboard_router,
        webhooks_router,
        xapi_router,
        seasons_router,
        problems_router,
        mail_signin_router,
        mail_invite_router,
        organizations_router,
        sso_router,
        sso_browser_router,
        scim_router,
        scim_token_router,
        adjustments_router,
        submissions_router,
        audit_router,
        lti_router,
        lti_sync_router,
        lti_keys_router,
        lti_browser_router,
    ):
        app.include_router(router)
    app.add_api_route("/", _to_dashboard, methods=["GET"], include_in_schema=False)
    mount_docs(app)
    mount_dashboard(app)
    install_openapi(app, settings.public_url)
    let_concrete_paths_win(app.routes)
    _add_edge(app, state, identity)
    return app


def outbox_consumers(settings: Settings) -> tuple[fanout.Consumer, ...]:
    """Every consumer of the outbox's events in this build (``events.fanout``), in the
    order a pass hands them the events: the webhooks' deliveries, the xAPI statements
    (with a public URL to name them by), the scores for the learning platforms'
    gradebooks (LTI AGS). The webhook dispatcher's passes fan out to all of them; an
    event none takes is deleted."""
    return (
        webhook_deliveries.CONSUMER,
        *xapi_consumer.consumers(settings),
        lti_grades_consumer.CONSUMER,
    )


async def _to_dashboard() -> RedirectResponse:
    """``GET /``: the dashboard (a person who types the host lands somewhere useful)."""
    return RedirectResponse("/ui/", status_code=307)


def _add_edge(app: FastAPI, state: AppState, identity: Identity) -> None:
    """The edge pipeline (``web.edge``): the application's one middleware, each request
    down the steps its route takes."""
    table = EdgeTable.from_routes(app.routes)  # what each route declared
    app.add_middleware(EdgePipeline, steps=edge_steps(app, state, identity), table=table)


def edge_steps(app: FastAPI, state: AppState, identity: Identity) -> list[EdgeStep]:
    """The steps of the edge, outermost first: those a route declares itself exempt from
    (``skipped_by``) are left out of its chain."""
    settings = state.settings
    hosts = [h.strip() for h in settings.allowed_hosts.split(",") if h.strip()]
    admission = Admission(
        limit=settings.server_max_concurrent_requests,
        queue=settings.server_queue_requests,
        wait_seconds=settings.server_queue_seconds,
    )
    steps = [
        EdgeStep.plain("request id", CorrelationIdMiddleware, header_name="X-Request-Id"),
        # A learning platform's launch lets that platform frame the dashboard (lti.framing).
        EdgeStep.plain(
            "security headers",
            SecurityHeadersMiddleware,
            page_policies={dashboard.PAGES: dashboard.PAGE_POLICY},
            frame_ancestors=app.state.lti_framing,
        ),
    ]
    if hosts and "*" not in hosts:
        steps.append(
            EdgeStep.plain(
                "allowed hosts", AllowedHostsMiddleware, skipped_by=Edge.ANY_HOST, hosts=hosts
            )
        )
    steps += [
        EdgeStep.plain("access log", AccessLogMiddleware),
        EdgeStep.plain("SCIM errors", ScimErrorMiddleware),  # whoever refused, under /scim/
        EdgeStep.plain(
            "concurrency limit",
            ConcurrencyLimitMiddleware,
            skipped_by=Edge.NOT_COUNTED,
            admission=admission,
        ),
    ]
    if settings.rate_limit_enabled:
        limiter = RateLimiter(settings)
        steps.append(
            EdgeStep(
                "rate limit",
                partial(
                    RateLimitMiddleware,
                    limiter=limiter,
                    verify=identity.verify_bearer,
                    browser_refusal=sso_rate_limited,  # SSO's browser routes: a 303, never JSON
                ),
                skipped_by=Edge.NOT_RATE_LIMITED,
            )
        )
    steps += [
        EdgeStep(
            "body limits",
            partial(
                BodyGuardMiddleware,
                limit=settings.max_body_bytes,
                bulk_limit=settings.max_bulk_body_bytes,
                body_timeout=settings.server_body_timeout_seconds,
            ),
        ),
        EdgeStep(
            "request timeout",
            partial(
                RequestTimeoutMiddleware,
                seconds=settings.request_timeout_seconds,
                bulk_seconds=settings.bulk_request_timeout_seconds,
                cancelled=state.cancelled_requests,
            ),
            skipped_by=Edge.NO_TIMEOUT,
        ),
        EdgeStep.plain("crash guard", CrashGuardMiddleware),
        EdgeStep.plain("HEAD as GET", HeadAsGetMiddleware),  # the steps above see (and log) HEAD
    ]
    if settings.fast_lane_enabled:
        steps.append(EdgeStep.plain("fast lane", FastLane, application=app))
    return steps


def create_served_app() -> FastAPI:
    """The application of a server process (``questline serve``): ``create_app``, then
    every object made so far (modules, routes, schemas: some 160,000) moved out of the
    cyclic garbage collector's sight with ``gc.freeze()``.

    Full collections walk every tracked object while holding the GIL; with those
    included they took 160 to 490 ms, stalling every request of the worker (the
    ``/healthz`` probes of tests/web/test_event_loop.py), and 20 to 70 ms without.
    They live as long as the process anyway.

    Every route's per-application copy is built first (FastAPI builds a router's on
    the first request routed into it): the first requests pay nothing, and the copies
    are frozen with the rest."""
    app = create_app()
    for _ in iter_route_contexts(app.routes):
        pass
    gc.collect()
    gc.freeze()
    return app

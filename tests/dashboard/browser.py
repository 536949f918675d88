"""Headless Chromium (Debian's ``/usr/bin/chromium``) driven by Playwright, with a guard
that fails the test on any console error, uncaught page error, or request that leaves
the service's origin.

Playwright's own browser download is not used (``playwright install`` needs the
internet); the system Chromium is launched by path.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe  # type: ignore[import-untyped]
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request, Route

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
WIDTHS = {"desktop": (1280, 900), "phone": (375, 812)}
TIMEOUT_MS = 10_000
AXE = Axe()


def chromium_path() -> Path | None:
    if CHROMIUM.exists():
        return CHROMIUM
    found = shutil.which("chromium")
    return Path(found) if found else None


@dataclass
class Guard:
    """What a page did that it must not: collected while the test runs, checked after."""

    origin: str
    problems: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)

    def allow_console(self, pattern: str) -> None:
        """An expected console error (Chromium logs every failed response, e.g. a 409)."""
        self.allowed.append(re.compile(pattern))

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        if message.location.get("url", "").endswith("/auth/session") and "401" in message.text:
            return  # the page asking whether it is signed in, before sign-in: expected
        if any(p.search(message.text) for p in self.allowed):
            return
        self.problems.append(f"console error: {message.text} ({message.location})")

    def on_page_error(self, error: Exception) -> None:
        self.problems.append(f"page error: {error}")

    def on_request(self, request: Request) -> None:
        if not request.url.startswith(self.origin + "/"):
            self.problems.append(f"request outside the service: {request.method} {request.url}")

    def watch(self, page: Page) -> None:
        page.on("console", self.on_console)
        page.on("pageerror", self.on_page_error)
        page.on("request", self.on_request)

    def check(self) -> None:
        assert not self.problems, "the dashboard misbehaved:\n" + "\n".join(self.problems)


@dataclass
class Pages:
    """Opens guarded pages in fresh browser contexts (own sessionStorage each)."""

    browser: Browser
    origin: str
    guard: Guard
    contexts: list[BrowserContext] = field(default_factory=list)

    def open(self, width: str = "desktop", *, dark: bool = False) -> Page:
        return self.new_tab(self.new_context(width, dark=dark))

    def new_context(self, width: str = "desktop", *, dark: bool = False) -> BrowserContext:
        """A fresh browser profile (its own cookies): one signed-in user."""
        w, h = WIDTHS[width]
        context = self.browser.new_context(
            viewport={"width": w, "height": h},
            color_scheme="dark" if dark else "light",
            locale="en-GB",
            timezone_id="UTC",
            service_workers="block",
        )
        context.set_default_timeout(TIMEOUT_MS)
        # Anything leaving the service is refused (and recorded by the guard): a test
        # must never wait on the internet, nor pass because it happened to be reachable.
        context.route(lambda url: not url.startswith(self.origin + "/"), _abort)
        self.contexts.append(context)
        return context

    def new_tab(self, context: BrowserContext) -> Page:
        """Another tab of the same profile (shares its cookies)."""
        page = context.new_page()
        self.guard.watch(page)
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


def _abort(route: Route) -> None:
    route.abort("blockedbyclient")


DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def check_accessibility(page: Page, name: str) -> None:
    """axe-core (pinned: axe-playwright-python ships it) finds no serious or critical
    violation on the page as it is now."""
    results = AXE.run(page, options={"resultTypes": ["violations"]})
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} — "
        + "; ".join(str(n.get("target")) for n in v.get("nodes", [])[:5])
        for v in results.response.get("violations", [])
        if v.get("impact") in ("serious", "critical")
    ]
    assert not bad, f"accessibility violations on {name}:\n" + "\n".join(bad)


def screenshot(page: Page, name: str) -> Path:
    """A full-page screenshot under test-artifacts/dashboard/, named by page and width."""
    width = page.viewport_size["width"] if page.viewport_size else 0
    path = ARTIFACTS / f"{name}-{width}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path

"""Serving the dashboard: ``/ui`` → ``/ui/`` (index.html), ``/ui/assets/…``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, RedirectResponse
from starlette.staticfiles import StaticFiles

if TYPE_CHECKING:
    from starlette.responses import Response
    from starlette.types import Scope

STATIC_DIR = Path(__file__).resolve().parent / "static"
ASSETS_DIR = STATIC_DIR / "assets"
INDEX_FILE = STATIC_DIR / "index.html"

# Everything the page loads comes from the service itself: no CDN, no inline
# script or style, no framing. connect-src 'self' is the API on the same origin.
CSP_DIRECTIVES: tuple[str, ...] = (
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
)
CONTENT_SECURITY_POLICY = "; ".join(CSP_DIRECTIVES)

INDEX_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    # index.html names the hashed assets of the current build: always revalidate.
    "Cache-Control": "no-cache",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}

router = APIRouter(include_in_schema=False)


PAGES = "/ui"
"""The dashboard's tree: its pages get ``PAGE_POLICY`` rather than the API's policy."""
PAGE_POLICY = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
"""The dashboard: its own scripts, styles and API only."""


@router.api_route("/ui", methods=["GET", "HEAD"], include_in_schema=False)
async def dashboard_redirect(request: Request) -> RedirectResponse:
    """``/ui`` → ``/ui/``, so the page's relative asset paths resolve under ``/ui/``."""
    root_path: str = request.scope.get("root_path", "")
    return RedirectResponse(url=f"{root_path}/ui/", status_code=307)


@router.api_route("/ui/", methods=["GET", "HEAD"], include_in_schema=False)
async def dashboard_index() -> FileResponse:
    """Serve the dashboard's single page (it routes in the URL fragment)."""
    if not INDEX_FILE.is_file():
        raise HTTPException(
            status_code=503,
            detail=("The dashboard is not built: run `npm ci && npm run build` in frontend/."),
        )
    return FileResponse(INDEX_FILE, media_type="text/html; charset=utf-8", headers=INDEX_HEADERS)


class AssetFiles(StaticFiles):
    """Static files whose names carry a content hash: cacheable for a year."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        """Serve the file, marked immutable (a new build gets new names)."""
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
            response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def mount_dashboard(app: FastAPI) -> None:
    """Add the dashboard to ``app``: the index routes and the ``/ui/assets`` files."""
    app.include_router(router)
    app.mount(
        "/ui/assets",
        AssetFiles(directory=ASSETS_DIR, check_dir=False),
        name="dashboard-assets",
    )

"""The OpenAPI document's shared parts and the self-hosted API docs (no CDN)."""

from __future__ import annotations

from typing import Any

import swagger_ui_bundle
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from questline.errors import PROBLEM_MEDIA_TYPE, ProblemDocument

_DESCRIPTIONS = {
    400: "Malformed JSON.",
    401: "Missing, expired or invalid bearer token.",
    403: "The token's role may not do this.",
    404: "No such resource in the caller's organization.",
    409: "Conflicts with the current state (e.g. a duplicate name).",
    412: "`If-Match` does not match the current `ETag`.",
    413: "The body is larger than allowed.",
    415: "The body is not JSON.",
    422: "Invalid input; `errors` names each field.",
    429: "Too many requests; see `Retry-After`.",
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the problem documents an operation can return."""
    return {
        status: {
            "description": _DESCRIPTIONS[status],
            "model": ProblemDocument,
            "content": {PROBLEM_MEDIA_TYPE: {}},
        }
        for status in statuses
    }


def mount_docs(app: FastAPI) -> None:
    """Serve Swagger UI from the package's own copy of its assets."""
    app.mount(
        "/docs-assets",
        StaticFiles(directory=swagger_ui_bundle.swagger_ui_path),
        name="docs-assets",
    )

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="Questline API",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/docs-assets/favicon-32x32.png",
        )

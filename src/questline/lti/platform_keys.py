"""Platforms' public keys (their JWKS): the service's one key-set cache
(``outbound.key_sets``), one per application, fetched the way LTI fetches.

* Cached per key set URL for ``QUESTLINE_LTI_KEYSET_TTL_SECONDS`` (1 hour), then
  refreshed while the cached set keeps serving launches.
* A launch signed by a key id the cached set lacks (the platform rotated its keys)
  fetches the set again, at most once every ``KEY_REFETCH_SECONDS``.
* The URL must resolve to public addresses (unless ``QUESTLINE_LTI_ALLOW_PRIVATE_URLS``),
  the connection goes to the address checked, redirects are not followed and answers
  are read up to ``MAX_DOCUMENT_BYTES`` (``outbound.fetching``).
"""

from __future__ import annotations

import functools
from typing import Any

from starlette.datastructures import State

from questline.config import Settings
from questline.outbound import fetching
from questline.outbound.key_sets import KeySets
from questline.web.state import made_once

MAX_DOCUMENT_BYTES = 256 * 1024
KEY_REFETCH_SECONDS = 10.0


async def get_json(url: str, *, settings: Settings, what: str) -> Any:
    """GET a document of a platform (its key set, its roster's pages' JSON)."""
    return await fetching.get_json(
        url,
        allow_private=settings.lti_allow_private_urls,
        http_timeout=settings.lti_http_timeout_seconds,
        max_bytes=MAX_DOCUMENT_BYTES,
        what=what,
    )


def platform_key_sets(settings: Settings) -> KeySets:
    return KeySets(
        functools.partial(get_json, settings=settings, what="platform's key set"),
        ttl=settings.lti_keyset_ttl_seconds,
        refetch_floor=KEY_REFETCH_SECONDS,
    )


def key_sets_of(app_state: State) -> KeySets:
    """The application's platform key sets, made on first use (on ``app.state``)."""
    return made_once(
        app_state, "lti_key_sets", KeySets, lambda: platform_key_sets(app_state.questline.settings)
    )

"""An OpenID provider's discovery document, fetched and cached; its signing keys in the
service's one key-set cache (``outbound.key_sets``).

* Fetched when an admin saves the configuration (a reason an admin can act on when they
  cannot be: ``ProviderUnusable``), then cached per process for
  ``QUESTLINE_OIDC_METADATA_TTL_SECONDS`` (1 hour) and fetched again on the first login
  after that; at most ``MAX_PROVIDERS`` issuers are kept (least recently fetched out).
* One fetch per issuer at a time: a hundred people signing in at 9:00 share it.
* An ID token signed by a key id the cached set does not hold (the provider rotated its
  keys) fetches the keys again, at most once every ``KEY_REFETCH_SECONDS``, so forged key
  ids cannot make the service hammer the provider.
* Every URL the service fetches must be https (unless ``QUESTLINE_OIDC_ALLOW_HTTP``) and,
  unless ``QUESTLINE_OIDC_ALLOW_PRIVATE_ISSUERS``, resolve to public addresses only: an
  admin must not be able to make the service probe its own network. The connection goes
  to the address checked; answers are read up to ``MAX_DOCUMENT_BYTES``; redirects are
  not followed (``outbound.fetching``).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from joserfc.jwk import KeySet
from starlette.datastructures import State

from questline.config import Settings
from questline.outbound import addresses, fetching
from questline.outbound.key_sets import CachedKeys, KeySets, read_key_set
from questline.web.state import made_once

DISCOVERY_PATH = "/.well-known/openid-configuration"
MAX_DOCUMENT_BYTES = 512 * 1024
MAX_PROVIDERS = 1024
KEY_REFETCH_SECONDS = 10.0


class ProviderUnusable(Exception):
    """The provider cannot be used; the message says why, for an admin to act on."""


@dataclass(frozen=True, slots=True)
class Provider:
    """What single sign-on needs of a provider, from its discovery document."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    end_session_endpoint: str | None
    signing_algorithms: tuple[str, ...]
    token_auth_method: str
    """``client_secret_basic`` unless the provider only takes ``client_secret_post``."""
    keys: CachedKeys
    """Its key set, as the key-set cache held it when this was read."""
    fetched_at: float

    def key_set(self) -> KeySet:
        return self.keys.key_set


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + DISCOVERY_PATH


def check_url(url: str, *, settings: Settings, what: str) -> None:
    """An absolute https URL (http only when allowed), without credentials or fragment."""
    parts = urlsplit(url)
    allowed = ("https", "http") if settings.oidc_allow_http else ("https",)
    if parts.scheme not in allowed or not parts.hostname:
        raise ProviderUnusable(
            f"The {what} {url!r} is not an absolute https URL"
            + ("." if settings.oidc_allow_http else " (http needs QUESTLINE_OIDC_ALLOW_HTTP=true).")
        )
    if parts.username or parts.password or parts.fragment:
        raise ProviderUnusable(f"The {what} {url!r} may not carry credentials or a fragment.")


async def _check_address(url: str, *, settings: Settings, what: str) -> None:
    if settings.oidc_allow_private_issuers:
        return
    try:
        host, port = addresses.split(url)
        found = await addresses.resolve(host, port)
    except addresses.UnsafeUrl as exc:
        raise ProviderUnusable(f"The {what} cannot be reached: {exc}") from exc
    internal = [a for a in found if addresses.is_internal(a)]
    if internal:
        raise ProviderUnusable(
            f"The {what}'s host {host!r} resolves to {internal[0]}, a loopback, private or "
            "link-local address; set QUESTLINE_OIDC_ALLOW_PRIVATE_ISSUERS=true for an "
            "on-premises provider."
        )


async def _get_json(url: str, *, settings: Settings, what: str) -> dict[str, Any]:
    try:
        document = await fetching.get_json(
            url,
            allow_private=settings.oidc_allow_private_issuers,
            http_timeout=settings.oidc_http_timeout_seconds,
            max_bytes=MAX_DOCUMENT_BYTES,
            what=what,
        )
    except fetching.FetchFailed as exc:
        raise ProviderUnusable(str(exc)) from exc
    if not isinstance(document, dict):
        raise ProviderUnusable(f"The {what} at {url} is not a JSON object.")
    return document


def _text(document: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = document.get(name)
    if isinstance(value, str) and value:
        return value
    if required:
        raise ProviderUnusable(f"The discovery document has no {name!r}.")
    return None


async def _fetch_keys(jwks_uri: str, *, settings: Settings) -> Any:
    """The provider's key set document (for the key-set cache)."""
    return await fetching.get_json(
        jwks_uri,
        allow_private=settings.oidc_allow_private_issuers,
        http_timeout=settings.oidc_http_timeout_seconds,
        max_bytes=MAX_DOCUMENT_BYTES,
        what="key set (jwks_uri)",
    )


def _token_auth_method(document: dict[str, Any]) -> str:
    offered = document.get("token_endpoint_auth_methods_supported")
    if isinstance(offered, list) and offered and "client_secret_basic" not in offered:
        if "client_secret_post" in offered:
            return "client_secret_post"
        raise ProviderUnusable(
            "The provider takes neither client_secret_basic nor client_secret_post at its "
            "token endpoint; Questline authenticates with the client secret."
        )
    return "client_secret_basic"


async def fetch_provider(issuer: str, *, settings: Settings, key_sets: KeySets) -> Provider:
    """The provider of ``issuer``, from its discovery document and key set (fetched
    into ``key_sets`` now: a configuration is saved with keys that work)."""
    check_url(issuer, settings=settings, what="issuer")
    url = discovery_url(issuer)
    await _check_address(url, settings=settings, what="issuer")
    document = await _get_json(url, settings=settings, what="discovery document")
    published = _text(document, "issuer")
    # OpenID Connect Discovery 1.0 §4.3: the document must name the issuer it was
    # fetched for (a trailing slash aside), or its tokens would name another.
    if published is None or published.rstrip("/") != issuer.rstrip("/"):
        raise ProviderUnusable(
            f"The discovery document at {url} names the issuer {published!r}, "
            f"not {issuer!r}; configure the issuer exactly as the provider names it."
        )
    endpoints: dict[str, str] = {}
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        value = _text(document, name)
        assert value is not None
        check_url(value, settings=settings, what=name)
        endpoints[name] = value
    for name in ("token_endpoint", "jwks_uri"):  # the ones the service itself calls
        await _check_address(endpoints[name], settings=settings, what=name)
    end_session = _text(document, "end_session_endpoint", required=False)
    if end_session is not None:
        check_url(end_session, settings=settings, what="end_session_endpoint")
    methods = document.get("code_challenge_methods_supported")
    if isinstance(methods, list) and "S256" not in methods:
        raise ProviderUnusable("The provider does not support PKCE with S256.")
    algorithms = document.get("id_token_signing_alg_values_supported")
    signing = tuple(a for a in algorithms or ["RS256"] if isinstance(a, str) and a != "none")
    if not signing:
        raise ProviderUnusable("The provider signs ID tokens with no usable algorithm.")
    auth_method = _token_auth_method(document)
    try:
        keys = read_key_set(
            endpoints["jwks_uri"], await _fetch_keys(endpoints["jwks_uri"], settings=settings)
        )
    except fetching.FetchFailed as exc:
        raise ProviderUnusable(str(exc)) from exc
    key_sets.remember(endpoints["jwks_uri"], keys)
    now = time.monotonic()
    return Provider(
        issuer=published,
        authorization_endpoint=endpoints["authorization_endpoint"],
        token_endpoint=endpoints["token_endpoint"],
        jwks_uri=endpoints["jwks_uri"],
        end_session_endpoint=end_session,
        signing_algorithms=signing,
        token_auth_method=auth_method,
        keys=keys,
        fetched_at=now,
    )


@dataclass
class ProviderDirectory:
    """The providers this process knows, by issuer (on ``app.state``: ``providers_of``);
    their keys in ``key_sets``, by ``jwks_uri``."""

    settings: Settings
    fetches: int = 0
    """Discovery fetches started (observable by tests)."""
    key_sets: KeySets = field(init=False)
    _cache: OrderedDict[str, Provider] = field(default_factory=OrderedDict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.key_sets = KeySets(
            functools.partial(_fetch_keys, settings=self.settings),
            ttl=self.settings.oidc_metadata_ttl_seconds,
            refetch_floor=KEY_REFETCH_SECONDS,
            max_sets=MAX_PROVIDERS,
        )

    def remember(self, issuer: str, provider: Provider) -> None:
        self._cache[issuer] = provider
        self._cache.move_to_end(issuer)
        while len(self._cache) > MAX_PROVIDERS:
            oldest = next(iter(self._cache))
            self._cache.pop(oldest)
            self._locks.pop(oldest, None)

    def forget(self, issuer: str) -> None:
        found = self._cache.pop(issuer, None)
        if found is not None:
            self.key_sets.forget(found.jwks_uri)

    def cached(self, issuer: str) -> Provider | None:
        """The cached provider of ``issuer`` while fresh, with the newest keys the
        key-set cache holds, without any I/O."""
        found = self._cache.get(issuer)
        if found is None or time.monotonic() - found.fetched_at >= self._ttl:
            return None
        keys = self.key_sets.cached(found.jwks_uri)
        return found if keys is None or keys is found.keys else replace(found, keys=keys)

    @property
    def _ttl(self) -> float:
        return self.settings.oidc_metadata_ttl_seconds

    async def fetch(self, issuer: str) -> Provider:
        """Fetch now (saving a configuration), and cache what was fetched."""
        self.fetches += 1
        provider = await fetch_provider(issuer, settings=self.settings, key_sets=self.key_sets)
        self.remember(issuer, provider)
        return provider

    async def provider(self, issuer: str) -> Provider:
        """The provider of ``issuer``: cached while fresh, else fetched (one fetch at a
        time per issuer; whoever waited uses its result)."""
        found = self.cached(issuer)
        if found is not None:
            return found
        lock = self._locks.setdefault(issuer, asyncio.Lock())
        async with lock:
            found = self.cached(issuer)
            if found is not None:
                return found
            return await self.fetch(issuer)

    async def with_fresh_keys(self, issuer: str, seen: Provider) -> Provider | None:
        """The provider with its key set fetched again (the key-set cache's rule: at
        most once every ``KEY_REFETCH_SECONDS``); None when nothing newer can be had."""
        try:
            keys = await self.key_sets.refreshed(seen.jwks_uri, seen.keys)
        except fetching.FetchFailed as exc:
            raise ProviderUnusable(str(exc)) from exc
        if keys is None:
            return None
        refreshed = replace(self._cache.get(issuer, seen), keys=keys)
        self.remember(issuer, refreshed)
        return refreshed


def providers_of(app_state: State) -> ProviderDirectory:
    """The application's provider directory, made on first use (kept on ``app.state``)."""
    return made_once(
        app_state,
        "sso_providers",
        ProviderDirectory,
        lambda: ProviderDirectory(app_state.questline.settings),
    )

"""Settings, read from ``QUESTLINE_*`` environment variables and a ``.env`` file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

SECRET_FILE_NAME = "jwt-secret"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="QUESTLINE_", env_file=".env", extra="ignore", frozen=True
    )

    data_dir: Path = Path("./data")
    database_url: str | None = None
    """Overrides the embedded SQLite file, e.g. ``postgresql+asyncpg://user@host/db``."""
    database_pool_size: int = 10
    database_echo: bool = False
    database_transaction_pooler: bool = False
    """The database URL leads to a transaction pooler (pgbouncer with ``pool_mode =
    transaction``): no prepared-statement cache, unique statement names."""
    database_replica_transaction_pooler: bool | None = None
    """The same for the replica URLs; default: as ``database_transaction_pooler``."""
    database_retry_attempts: int = Field(default=4, ge=1, le=20)
    """A request whose transaction hits a deadlock or serialization failure (PostgreSQL)
    is run again, up to this many attempts in all; then 503 with Retry-After."""
    database_listen_url: str | None = None
    """A direct (not pgbouncer) PostgreSQL URL of the primary for the read model's LISTEN
    connection (LISTEN needs a session of its own) and for the connection that announces
    this process's commits (``storage.notify``); default: ``database_url``."""
    database_replica_urls: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Comma-separated read-only URLs of streaming replicas (hot standbys) for reads."""
    database_owner_url: str | None = None
    """PostgreSQL: the URL of the role that owns the tables, for migrations (``questline
    db upgrade``, ``serve --migrate``); default: ``database_url``. With row-level
    security the service's own ``database_url`` names a role that does not own them
    (docs/deploy.md, "Two database roles")."""
    database_row_security: bool = True
    """PostgreSQL: act under the tenant tables' row-level security policies: every
    transaction sets the organization it acts for, and the few look-ups across
    organizations switch to ``database_every_organization_role``. On by default: the
    service refuses to start when its role would bypass the policies (it owns the tables,
    is a superuser or has BYPASSRLS) or cannot take that role; a deployment with one role
    that owns the tables turns it off, and runs without that second wall (docs/deploy.md,
    "Two database roles"). SQLite has no row security."""
    database_every_organization_role: str = "questline_every_organization"
    """PostgreSQL, with ``database_row_security``: the role (NOLOGIN BYPASSRLS, granted to
    the service's role) that the functions marked ``@finds_the_organization``,
    ``@sweeps_every_organization`` and (an operator's, on a global discipline)
    ``@across_a_global_discipline`` take for their statements only."""
    database_replica_max_lag_seconds: float = 5.0
    """A replica further behind the primary than this serves no reads (the primary does)."""
    database_replica_check_seconds: float = 0.2
    """How often each process compares every replica's replayed WAL with the primary's."""
    read_model_max_bytes: int = 64 * 1024 * 1024
    """The read model's cache of ready-to-send bodies, per process (LRU by bytes)."""
    read_model_stream_rows: int = Field(default=5_000, ge=1)
    """A whole list (``GET /team``, ``GET /discipline`` without ``limit``) longer than
    this many items is streamed to the client in chunks from a server-side cursor and
    not kept by the read model; up to it, the list is built once and cached as bytes."""

    # Authentication (DESIGN §3).
    jwt_secret: str | None = None
    """HS256 secret; generated into the data directory on first start when unset."""
    jwt_previous_secret: str | None = None
    """The signing secret before the current one, after a rotation: secrets sealed at
    rest under it (``storage.sealing``) stay readable until rewritten. Tokens it signed
    are not accepted."""
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["HS256"])
    jwt_public_key: str | None = None
    """PEM public key (RS256/ES256) of an identity provider."""
    jwt_jwks_url: str | None = None
    jwt_jwks_timeout_seconds: float = Field(default=5, gt=0)
    """A JWKS fetch taking longer fails (the request gets 503; cached keys stay in use)."""
    jwt_jwks_ttl_seconds: float = Field(default=300, gt=0)
    """Keys older than this are refreshed in the background while still used."""
    jwt_jwks_min_refetch_seconds: float = Field(default=10, ge=0)
    """An unknown key id fetches the keys again at most this often (counted from the end
    of the last fetch): forged key ids cannot make the service hammer its provider."""
    jwt_issuer: str | None = "questline"
    jwt_audience: str | None = "questline"
    jwt_org_claim: str = "org"
    jwt_role_claim: str = "role"
    jwt_leeway_seconds: int = 30
    token_lifetime_days: int = 30
    # The dashboard's sign-in (questline.auth.sessions): one-time codes, cookie sessions.
    signin_code_minutes: int = 15
    session_lifetime_hours: int = 12

    # Request limits.
    max_body_bytes: int = 5 * 1024 * 1024
    max_bulk_body_bytes: int = 32 * 1024 * 1024
    max_bulk_teams: int = 10_000
    max_page_size: int = 1000
    idempotency_ttl_hours: int = 24
    max_json_depth: int = 32
    """Deeper JSON bodies are refused (400) before they are parsed."""
    request_timeout_seconds: float = 30
    """A request that has not started its answer after this long is answered 503 and
    cancelled; a streamed answer (``GET /team`` of every team) is cut off when it sends
    nothing for this long, however long it runs while it keeps sending."""
    bulk_request_timeout_seconds: float = 300
    keep_alive_seconds: int = 75
    """Idle keep-alive connections are closed after this long. Longer than the idle timeout
    of clients and load balancers (httpx 5 s, many balancers 60 s), so that they close
    first: a server closing a connection as a client reuses it fails that request."""

    # The server boundary (questline.web.server_limits; docs/reliability.md "Limits").
    server_max_request_line_bytes: int = Field(default=8192, ge=256)
    """Longest request line (method, target, version): 414 past it."""
    server_max_query_bytes: int = Field(default=4096, ge=64)
    """Longest query string: 414 past it."""
    server_max_header_line_bytes: int = Field(default=8192, ge=256)
    """Longest header line (name and value): 431 past it."""
    server_max_header_bytes: int = Field(default=32768, ge=1024)
    """All header lines of a request together: 431 past it."""
    server_header_timeout_seconds: float = Field(default=10, gt=0)
    """The request line and headers must arrive within this (408 and close)."""
    server_body_timeout_seconds: float = Field(default=60, gt=0)
    """The whole body must arrive within this after the headers (408 and close)."""
    server_max_connections: int = Field(default=1000, ge=1)
    """Open connections per worker; past it a request is answered 503 and closed."""
    server_max_concurrent_requests: int = Field(default=100, ge=1)
    """Requests handled at once per worker; past it they wait (the queue below)."""
    server_queue_requests: int = Field(default=400, ge=0)
    """Requests per worker that may wait for one of those slots, first come first
    served; past it a fast 503 with Retry-After (0: no queue)."""
    server_queue_seconds: float = Field(default=5.0, gt=0)
    """The longest a request waits for a slot; then a 503 with Retry-After."""
    trusted_proxies: str = ""
    """Comma-separated addresses whose ``X-Forwarded-For``/``-Proto`` are believed (none
    by default: the peer address is the client)."""
    allowed_hosts: str = ""
    """Comma-separated ``Host`` values served (empty or ``*``: any); every route obeys it
    but the probes ``/healthz`` and ``/readyz``. Links never use the Host header (see
    ``public_url``)."""

    fast_lane_enabled: bool = True
    """Answer the routes that declare an early answer (cached reads, progress writes)
    before FastAPI's routing (``questline.web.fastlane``, docs/performance.md); off:
    every request takes its route. The answers are the same either way."""
    progress_fast_path_enabled: bool = True
    """Group-commit the progress writes the fast lane answers (docs/performance.md,
    "Writes"); off: every progress write takes the route and a transaction of its own."""
    progress_gather_window_ms: float = Field(default=10.0, ge=0, le=50)
    """Under concurrent progress writes, how long a batch may wait for the writers of the
    last one before it is written (0: never). The wait ends as soon as they are back, so
    this only bounds it: when fewer come back than last time (a client stopped). A write
    with nobody else around never waits (docs/performance.md, "Writes")."""

    attempts_per_minute: int = Field(default=10, ge=1, le=10_000)
    """Answers one member may submit in any 60 seconds (``POST /team/{id}/attempts``;
    more is 429 with ``Retry-After``), counted from the stored attempts, so every process
    agrees (docs/learners.md). Not switched off by ``rate_limit_enabled``: it is a rule
    of the game (it stops guessing), not a guard of the service."""

    # Rate limits per caller (token sub+org, else client address) and class of route.
    rate_limit_enabled: bool = True
    rate_limit_storage: str = "memory://"
    """``memory://`` (per process) or ``redis://host:port/db`` (shared by every process)."""
    rate_limit_reads: str = "1200/minute"
    rate_limit_writes: str = "300/minute"
    rate_limit_bulk: str = "20/minute"
    rate_limit_scim: str = "1200/minute"
    """``/scim/v2``, reads and writes alike: a directory's first push sends a request per
    user and per group (docs/identity.md)."""
    scim_max_results: int = Field(default=1000, ge=1, le=10_000)
    """The most resources a SCIM list returns at once (``count`` is capped to it)."""
    scim_token_max_days: int = Field(default=365, ge=1, le=365)
    """The longest a SCIM token is issued for, and the lifetime of one asked without
    ``Days``: a year at most, shorter if the organization's policy says so."""

    metrics_token: str | None = None
    """A static bearer token ``/metrics`` takes besides an ``operator`` JWT (a scraper's
    credential that opens nothing else)."""
    metrics_cache_seconds: float = Field(default=1.0, ge=0, le=60)
    """``/metrics`` renders at most once in this many seconds; scrapes in between get
    the same bytes (0: render every scrape)."""
    idempotency_purge_interval_seconds: float = Field(default=600, gt=0)
    """How often each process deletes idempotency records older than their TTL."""

    # Webhooks (docs/webhooks.md).
    webhooks_allow_private_urls: bool = False
    """Allow webhook URLs that resolve to loopback, private or link-local addresses."""
    webhooks_dispatcher_enabled: bool = True
    """Run the delivery dispatcher in this process (off for API-only processes)."""
    webhooks_retry_base_seconds: float = 5
    """The first retry waits this long; each next one twice as long, with jitter."""
    webhooks_max_attempts: int = 15
    """Attempts per delivery (15 at a 5 s base: retries over about 23 hours)."""
    webhooks_timeout_seconds: float = 10
    """Per attempt: connecting, sending and reading the answer."""
    webhooks_disable_after_seconds: float = 3 * 24 * 3600
    """A webhook whose every attempt failed for this long is disabled."""
    webhooks_poll_seconds: float = 1.0
    """How often the dispatcher looks for work committed by other processes."""
    webhooks_concurrency: int = 16
    """Deliveries in flight at once, per process."""
    webhooks_concurrency_per_organization: int = Field(default=4, ge=1)
    """Deliveries of one organization in flight at once, per process: an organization
    whose receivers hang holds at most this many of the process's sends."""
    webhooks_concurrency_per_host: int = Field(default=8, ge=1)
    """Deliveries to one receiving host (the URL's host name) in flight at once, per
    process, whatever the organizations."""
    events_retention_days: int = 30
    """Events and deliveries older than this are purged."""

    # E-mail (questline.mail; docs/identity.md "E-mailed sign-in links").
    smtp_url: str | None = None
    """``smtp://[user[:password]@]host[:port]`` (STARTTLS when the server offers it; port
    25 by default) or ``smtps://…`` (TLS from the start; port 465). Unset: no e-mail."""
    smtp_username: str | None = None
    """Overrides the URL's user (a secret store may hand these over apart)."""
    smtp_password: str | None = None
    """Overrides the URL's password."""
    smtp_ca_file: Path | None = None
    """PEM certificates to trust for the SMTP server's TLS (default: the system's)."""
    smtp_timeout_seconds: float = Field(default=30, gt=0)
    """Per message: connecting, TLS, authenticating and sending."""
    mail_from: str | None = None
    """The sender of every e-mail, e.g. ``Questline <questline@example.org>``."""
    mail_dispatcher_enabled: bool = True
    """Send queued e-mail from this process (off for API-only processes)."""
    mail_poll_seconds: float = Field(default=1.0, gt=0)
    """How often the sender looks for e-mail queued by other processes."""
    mail_retry_base_seconds: float = Field(default=30, gt=0)
    """The first retry waits this long; each next one twice as long, with jitter."""
    mail_max_attempts: int = Field(default=8, ge=1)
    """Attempts per e-mail (8 at a 30 s base: retries over about an hour)."""
    mail_concurrency: int = Field(default=4, ge=1)
    """E-mails sent at once, per process."""
    mail_invite_link_hours: int = Field(default=72, ge=1, le=24 * 30)
    """How long the one-time link of an invitation works (a requested link:
    ``signin_code_minutes``)."""
    mail_signin_limit_per_address: str = "5/hour"
    """``POST /auth/signin-link``: requests per e-mail address and organization."""
    mail_signin_limit_per_client: str = "30/minute"
    """``POST /auth/signin-link``: requests per client address (on top of the writes limit)."""
    # xAPI statements to each organization's learning record store (docs/platforms.md).
    xapi_allow_private_urls: bool = False
    """Allow LRS endpoints on loopback, private or link-local addresses (tests, a
    development LRS on this machine); off: only public addresses, as for webhooks."""
    xapi_dispatcher_enabled: bool = True
    """Send statements from this process (off for API-only processes)."""
    xapi_batch_size: int = Field(default=50, ge=1, le=500)
    """Statements per POST to an LRS (an xAPI array)."""
    xapi_retry_base_seconds: float = 5
    """The first retry of a batch the LRS did not take waits this long; then doubles."""
    xapi_max_attempts: int = Field(default=15, ge=1)
    """Attempts per statement before it is shown as failed."""
    xapi_timeout_seconds: float = Field(default=10, gt=0)
    """Per POST: connecting, sending and reading the LRS's answer."""
    xapi_poll_seconds: float = Field(default=1.0, gt=0)
    """How often the statement dispatcher looks for work of other processes."""
    xapi_concurrency: int = Field(default=8, ge=1)
    """Batches in flight at once, per process (one per organization at a time)."""

    shutdown_grace_seconds: int = 10
    """On SIGTERM, requests still open after this long (event streams) are cancelled."""

    # The live leaderboard (GET /leaderboard/stream).
    stream_heartbeat_seconds: float = 15
    stream_max_seconds: float = 3600
    """A stream ends after this long; the client reconnects (with ``Last-Event-ID``),
    which spreads streams over the processes behind a balancer again."""
    stream_min_interval_seconds: float = 0.25
    stream_max_per_organization: int = 200
    stream_max_per_process: int = 500
    """Keep it below ``server_max_connections``: every stream holds a connection."""
    stream_poll_seconds: float = 0.5
    """How often a process looks for changes made by other processes (SQLite, and
    PostgreSQL without LISTEN)."""

    # Single sign-on with an organization's OpenID provider (questline.sso, docs/identity.md).
    oidc_allow_http: bool = False
    """Accept ``http://`` issuers (tests and development); production issuers are https."""
    oidc_allow_private_issuers: bool = False
    """Accept issuers (and their token and key endpoints) on loopback, private or
    link-local addresses: an on-premises provider. Off, an admin cannot make the service
    fetch from its own network (SSRF)."""
    oidc_metadata_ttl_seconds: float = Field(default=3600, gt=0)
    """A provider's discovery document and keys are fetched again after this long."""
    oidc_http_timeout_seconds: float = Field(default=5, gt=0)
    """Each call to a provider (discovery, keys, token exchange) gives up after this."""
    oidc_login_minutes: int = Field(default=10, ge=1, le=60)
    """A login started must come back from the provider within this (its ``state``)."""

    # LTI 1.3: learning platforms that launch Questline (questline.lti, docs/platforms.md).
    lti_allow_http: bool = False
    """Accept ``http://`` platform URLs (tests and development); production ones are https."""
    lti_allow_private_urls: bool = False
    """Accept platform URLs on loopback, private or link-local addresses (an on-premises
    Moodle); off, an admin cannot make the service fetch from its own network (SSRF)."""
    lti_login_minutes: int = Field(default=10, ge=1, le=60)
    """A login started (``/lti/login``) must come back as a launch within this."""
    lti_keyset_ttl_seconds: float = Field(default=3600, gt=0)
    """A platform's public keys are fetched again after this long (and at once, at most
    every 10 s, for a key id the cached set lacks)."""
    lti_http_timeout_seconds: float = Field(default=5, gt=0)
    """Each call to a platform (keys, token, roster, scores) gives up after this."""
    lti_key_rotation_days: int = Field(default=90, ge=1)
    """Questline's signing key is replaced after this long; the one before stays
    published until the next rotation."""
    lti_roster_max_members: int = Field(default=10_000, ge=1)
    """A roster sync reads at most this many members (pages of 1,000 at most)."""
    lti_grades_dispatcher_enabled: bool = True
    """Send scores to the platforms' gradebooks (AGS) from this process."""
    lti_grades_poll_seconds: float = Field(default=1.0, gt=0)
    """How often the grades dispatcher looks for scores of other processes."""
    lti_grades_retry_base_seconds: float = Field(default=5, gt=0)
    """The first retry of a score the platform did not take waits this long; then doubles."""
    lti_grades_max_attempts: int = Field(default=15, ge=1)
    """Attempts per score before it is shown as failed."""

    log_level: str = "INFO"
    log_format: Literal["auto", "json", "text"] = "auto"
    """``auto``: human-readable lines when stderr is a terminal, JSON lines otherwise."""
    public_url: str | None = None
    """The address clients reach the service at, e.g. ``https://questline.example.org``.
    Unset: every link the service emits (``Location``, ``Link``, problem ``type``) is a
    relative reference, which resolves on whatever address the request came to; set:
    links are absolute on it. Never taken from the ``Host`` header (docs/api.md, "Links")."""
    metrics_public: bool = False
    """Serve ``/metrics`` to anyone; off: it needs an ``operator`` token or
    ``metrics_token`` (docs/operations.md, "Metrics")."""
    opentelemetry: bool = False
    """FastAPI's own OpenTelemetry traces, metrics and logs, for a process where an
    operator configured OpenTelemetry's providers (``opentelemetry-instrument``). Off,
    no request asks whether a provider is configured (docs/operations.md, "Traces")."""

    @field_validator("public_url", mode="before")
    @classmethod
    def _normalize_public_url(cls, value: object) -> object:
        """Empty means unset; a trailing slash is dropped (links append paths)."""
        if isinstance(value, str):
            value = value.strip().rstrip("/")
            if not value:
                return None
            scheme, _, rest = value.partition("://")
            if scheme.lower() not in ("http", "https") or not rest or "?" in rest or "#" in rest:
                raise ValueError(
                    "QUESTLINE_PUBLIC_URL must be an absolute http:// or https:// URL "
                    "without query or fragment, e.g. https://questline.example.org"
                )
        return value

    # The audit log (GET /audit).
    audit_retention_days: int = Field(default=365, ge=1)
    """Audit entries older than this are purged."""
    audit_purge_interval_seconds: float = Field(default=3600, gt=0)
    """How often each process deletes the audit entries past their retention."""

    @field_validator("database_replica_urls", mode="before")
    @classmethod
    def _split_urls(cls, value: object) -> object:
        if isinstance(value, str):
            return [url.strip() for url in value.split(",") if url.strip()]
        return value

    @property
    def resolved_listen_url(self) -> str:
        return self.database_listen_url or self.resolved_database_url

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'questline.db').resolve()}"

    @property
    def resolved_owner_url(self) -> str:
        return self.database_owner_url or self.resolved_database_url

    @property
    def row_security(self) -> bool:
        """Row-level security is on (PostgreSQL only; SQLite has none)."""
        return self.database_row_security and not self.is_sqlite

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")

    def existing_signing_secret(self) -> str | None:
        """The signing secret as configured, else as kept in the data directory, without
        making one (None: neither yet). For the migrations, which re-seal what is sealed
        under it and must not create it; ``auth.tokens.load_or_create_secret`` makes it."""
        if self.jwt_secret is not None:
            return self.jwt_secret
        try:
            return (self.data_dir / SECRET_FILE_NAME).read_text().strip() or None
        except FileNotFoundError:
            return None

    def ensure_data_dir(self) -> Path:
        """The data directory, private to the service's user (0700)."""
        return private_dir(self.data_dir)


def private_dir(path: Path) -> Path:
    """``path`` as a directory private to the service's user (0700), made if missing."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


def get_settings() -> Settings:
    return Settings()

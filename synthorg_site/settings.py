"""Django settings, read from the environment (see README, "Configuration")."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import environ
from channels_redis.core import RedisChannelLayer
from django.core.exceptions import ImproperlyConfigured

from audit_app.chain import AUDIT_KEYS_FORM, AuditKeyError, AuditKeyRing
from common.platform import runtime
from common.platform.environment import EnvironmentSettingError, load_environment
from common.platform.logs import logging_config
from common.platform.metrics.process import multiprocess_dir_ensure
from common.platform.origins import OriginSettingError, origins_setting_parse
from common.platform.private_state import create_private_file, ensure_var_layout, private_dir
from common.platform.redis_options import (
    RedisTimeoutSettingError,
    broker_transport_options,
    channel_layer_host,
    client_options,
    redis_timeouts,
)
from common.platform.safety import ProductionSettings, unsafe_production_settings

env = environ.Env()
BASE_DIR = runtime.BASE_DIR
VAR_DIR = runtime.var_dir()
# var/ is the console's alone (see common/platform/private_state.py).
ensure_var_layout(VAR_DIR)
# Before anything imports prometheus_client: every process of this node writes its
# counters there and /metrics sums them (synthorg_site/metrics).
PROMETHEUS_MULTIPROC_DIR = multiprocess_dir_ensure(VAR_DIR / "metrics")

SYNTHORG_ENV = runtime.mode()
# Every SYNTHORG_* number, timeout, limit and flag: typed and range-checked in one
# model (common/platform/environment.py); a bad value refuses to start, naming it.
try:
    _environment = load_environment()
except EnvironmentSettingError as exc:
    raise ImproperlyConfigured(
        "SynthOrg Console refuses to start with invalid settings in the environment:\n  - "
        + str(exc).replace("\n", "\n  - ")
    ) from None

DEBUG = env.bool("DEBUG", default=SYNTHORG_ENV == "dev")

# The audit chain: HMAC keys as ID:SECRET, newest first (comma-separated). Empty
# outside production: a key kept in var/audit_keys (0600) is made on first use.
SYNTHORG_AUDIT_KEYS = env.list("SYNTHORG_AUDIT_KEYS", default=[])
# `synthorg_audit new-key` / `rotate-key` make the first (or a replacing) key, so they
# run with no key or a malformed one: new-key reads none; rotate-key refuses by itself,
# saying what to do, when the keys it would rotate are missing or come from here.
_making_audit_key = sys.argv[1:2] == ["synthorg_audit"] and sys.argv[2:3] in (
    ["new-key"],
    ["rotate-key"],
)
if not _making_audit_key:
    try:
        AuditKeyRing.parse(SYNTHORG_AUDIT_KEYS, source="SYNTHORG_AUDIT_KEYS")
    except AuditKeyError as exc:
        if any(k.strip() for k in SYNTHORG_AUDIT_KEYS):  # empty: the key file or production
            raise ImproperlyConfigured(
                f"SynthOrg Console refuses to start: SYNTHORG_AUDIT_KEYS is malformed: {exc}. "
                f"{AUDIT_KEYS_FORM}"
            ) from None


_secret_from_env = bool(env.str("SECRET_KEY", default=""))
SECRET_KEY = env.str("SECRET_KEY", default="") or runtime.generated_secret_key()

ALLOWED_HOSTS = env.list(
    "ALLOWED_HOSTS",
    default=[]
    if SYNTHORG_ENV == "production"
    else ["localhost", "127.0.0.1", "[::1]", "testserver"],
)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
PORT = env.int("PORT", default=8000)
# The origins whose pages may open the console's websockets (scheme://host[:port]); unset:
# http on the serving port for each ALLOWED_HOSTS name, SYNTHORG_CONSOLE_URL and
# CSRF_TRUSTED_ORIGINS (synthorg_site/http_edge/origins.py).
SYNTHORG_ORIGINS = env.list("SYNTHORG_ORIGINS", default=[])
try:
    origins_setting_parse(SYNTHORG_ORIGINS, name="SYNTHORG_ORIGINS")
except OriginSettingError as exc:
    raise ImproperlyConfigured(f"SynthOrg Console refuses to start: {exc}") from None

_database_url_set = bool(env.str("DATABASE_URL", default=""))
DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'synthorg.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Created 0600 before SQLite opens it; its -wal and -shm files take its mode.
    if str(DATABASES["default"]["NAME"]).startswith(str(VAR_DIR) + "/"):
        create_private_file(Path(DATABASES["default"]["NAME"]))
    # WAL lets the web process read while a worker writes; IMMEDIATE avoids
    # "database is locked" on upgrade from a read to a write transaction.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )
else:
    # Web requests run their sync code in threads, and a worker supervises its calls in
    # threads: each takes a pooled connection while it talks to the database and gives
    # it back while it waits (a sandbox at work, a person deciding).
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env.int("DATABASE_POOL_MIN", default=1),
        "max_size": env.int("DATABASE_POOL_MAX", default=20),
        "timeout": env.float("DATABASE_POOL_TIMEOUT", default=3.0),
        # ...unless every connection is at work and none failed: then a burst waits on.
        "busy_timeout": env.float("DATABASE_POOL_BUSY_TIMEOUT", default=30.0),
        # A lost connection is made again with pauses that double (1, 2, 4 s...), each
        # try holding a place in the pool: after a minute's outage the next try could
        # come half a minute after PostgreSQL was back. Given up after this long, the
        # next request that needs a connection makes it at once instead.
        "reconnect_timeout": 2.0,
    }
    # Each pooled connection is checked as it is handed out (one empty query): after
    # PostgreSQL restarts, the pool's dead connections are replaced instead of failing
    # a request each, all at the first failed check (common/platform/postgresql).
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    # Parameters travel apart from the statement, and a statement a connection has run
    # five times is prepared on it: PostgreSQL then skips parsing and planning it, and the
    # client skips quoting every value into the text. A governed call makes about 26
    # statements, the same ones every time (bench/bench_engine.py: about 1.3 ms less
    # PostgreSQL CPU per call, and 0.7 ms less in each of the web node and the worker).
    DATABASES["default"]["OPTIONS"]["server_side_binding"] = True
    DATABASES["default"]["OPTIONS"]["prepare_threshold"] = 5
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"]["ENGINE"] = "common.platform.postgresql"

if SYNTHORG_ENV == "production":
    _problems = unsafe_production_settings(
        ProductionSettings(
            debug=DEBUG,
            secret_key_from_env=_secret_from_env,
            secret_key=SECRET_KEY,
            allowed_hosts=ALLOWED_HOSTS,
            database_url_set=_database_url_set,
            audit_keys_set=_making_audit_key or any(k.strip() for k in SYNTHORG_AUDIT_KEYS),
        )
    )
    if _problems:
        raise ImproperlyConfigured(
            "SynthOrg Console refuses to start in production with unsafe settings:\n  - "
            + "\n  - ".join(_problems)
            + "\n(set SYNTHORG_ENV=dev for a local console)"
        )
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    if env.bool("SECURE_PROXY_SSL_HEADER", default=False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

REDIS_URL = runtime.redis_url()
SYNTHORG_CONFIG = (
    _environment.SYNTHORG_CONFIG
    if _environment.SYNTHORG_CONFIG is not None
    else str(BASE_DIR / "synthorg.yaml")
)
# Modules with a `TOOLS` tuple registered beside the built-in tools.
SYNTHORG_EXTRA_TOOL_MODULES = env.list("SYNTHORG_EXTRA_TOOL_MODULES", default=[])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    # Sign-in throttling: its backend, middleware and signals (trust_app/signin).
    "axes",
    "common",
    # The site itself: its management commands (synthorg_console); no models.
    "synthorg_site",
    "trust_app",
    "tools_app",
    "audit_app",
    "approvals_app",
    "secrets_app",
    "notifications_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Outside every middleware that may answer a page itself (404, 405, lockout, CSRF).
    "synthorg_site.http_edge.csp.ConsoleCSPMiddleware",
    "common.platform.logs.RequestIdMiddleware",
    "synthorg_site.http_edge.middleware.ApiErrorEnvelopeMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "trust_app.auth.PersonTokenMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "synthorg_site.error_pages.middleware.MethodNotAllowedPageMiddleware",
    # A page's 404 in the console's layout, DEBUG on or off (not Django's debug page).
    "synthorg_site.error_pages.middleware.NotFoundPageMiddleware",
    # Last: turns a locked sign-in into the lockout page (trust_app/signin/pages.py).
    "axes.middleware.AxesMiddleware",
]

# Content-Security-Policy (django-csp; synthorg_site/http_edge/csp.py adds the approvals
# socket's ws:/wss: origins to connect-src): the console's own files only, no inline
# script, style or event handler anywhere, the admin and the API docs included.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

ROOT_URLCONF = "synthorg_site.urls"
ASGI_APPLICATION = "synthorg_site.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "common.context_processors.person",
            ],
        },
    }
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Only a keyed hash of each session key is stored: a read of the table replays nothing.
SESSION_ENGINE = "synthorg_site.sessions"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# Password sign-ins (/accounts/login/ and /admin/login/ alike) pass the throttle first:
# failures per account from one address and per address, counted in Redis, each lock
# longer than the last up to the longest, never a lock on an account alone
# (trust_app/signin). Every failure is audited within the per-client refusal budget.
AUTHENTICATION_BACKENDS = [
    "trust_app.signin.handler.SigninThrottleBackend",
    # Passwords only for the accounts people.local_accounts allows (trust_app.sso).
    "trust_app.sso.backends.LocalAccountBackend",
    "trust_app.sso.backends.SingleSignOnBackend",
]
SYNTHORG_SIGNIN_ACCOUNT_FAILURES = _environment.SYNTHORG_SIGNIN_ACCOUNT_FAILURES
SYNTHORG_SIGNIN_ADDRESS_FAILURES = _environment.SYNTHORG_SIGNIN_ADDRESS_FAILURES
SYNTHORG_SIGNIN_WINDOW_SECONDS = _environment.SYNTHORG_SIGNIN_WINDOW_SECONDS
SYNTHORG_SIGNIN_LOCK_SECONDS = _environment.SYNTHORG_SIGNIN_LOCK_SECONDS
SYNTHORG_SIGNIN_LOCK_MAX_SECONDS = _environment.SYNTHORG_SIGNIN_LOCK_MAX_SECONDS
AXES_HANDLER = "trust_app.signin.handler.SigninThrottleHandler"
AXES_CLIENT_IP_CALLABLE = "trust_app.signin.handler.signin_client_address"
AXES_LOCKOUT_CALLABLE = "trust_app.signin.pages.signin_locked_response"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
# A sign-in refused while locked is not counted again: the lock ends when it said.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Locks end by themselves (the longest one); axes' own tables are not used.
AXES_COOLOFF_TIME = timedelta(seconds=SYNTHORG_SIGNIN_LOCK_MAX_SECONDS)
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
private_dir(STATIC_ROOT)
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = SYNTHORG_ENV != "production"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if SYNTHORG_ENV == "production"
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis timeouts are chosen here, never inherited from the client library: a read
# must outlast the channel layer's blocking read, or every wait past it fails.
try:
    REDIS_TIMEOUTS = redis_timeouts(
        socket_timeout=_environment.SYNTHORG_REDIS_SOCKET_TIMEOUT,
        connect_timeout=_environment.SYNTHORG_REDIS_CONNECT_TIMEOUT,
        health_check_interval=_environment.SYNTHORG_REDIS_HEALTH_CHECK_INTERVAL,
        blocking_read=RedisChannelLayer.brpop_timeout,
    )
except RedisTimeoutSettingError as exc:
    raise ImproperlyConfigured(str(exc)) from exc
# The console's own short commands (heartbeats, limits, leases) and /healthz's PING
# fail fast instead: none of them blocks on the server.
SYNTHORG_REDIS_COMMAND_TIMEOUT = _environment.SYNTHORG_REDIS_COMMAND_TIMEOUT

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [channel_layer_host(REDIS_URL, REDIS_TIMEOUTS)],
            "prefix": "synthorg:ch",
        },
    }
}

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "synthorg",
        "OPTIONS": client_options(REDIS_URL, REDIS_TIMEOUTS),
    }
}

# Celery: execution of tools happens only in workers (see synthorg_site/celery.py).
CELERY_BROKER_URL = runtime.celery_broker_url(REDIS_URL)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    **broker_transport_options(REDIS_URL, REDIS_TIMEOUTS),
    # A message not acknowledged within this time is delivered again; keep it above
    # every task's hard time limit so a slow call is never run twice by redelivery.
    "visibility_timeout": 3600,
}
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=150)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=180)
CELERY_BEAT_SCHEDULE_FILE = str(VAR_DIR / "celerybeat-schedule")
SYNTHORG_HEARTBEAT_INTERVAL = _environment.SYNTHORG_HEARTBEAT_INTERVAL
SYNTHORG_HEARTBEAT_MAX_AGE = _environment.SYNTHORG_HEARTBEAT_MAX_AGE
SYNTHORG_SANDBOX_PROBE_INTERVAL = _environment.SYNTHORG_SANDBOX_PROBE_INTERVAL
# MCP bridge: how long a process trusts its copy of the recorded upstream tools; how
# often workers list each server again (its health check); how long a warm server
# waits idle before it is stopped; how many warm servers a worker process keeps; the
# cap on one upstream result (UTF-8 text plus binary data); the time to start a server
# and list its tools; how often a running call looks whether it was cancelled.
SYNTHORG_BRIDGE_CATALOG_TTL_SECONDS = _environment.SYNTHORG_BRIDGE_CATALOG_TTL_SECONDS
SYNTHORG_BRIDGE_HEALTH_INTERVAL = _environment.SYNTHORG_BRIDGE_HEALTH_INTERVAL
SYNTHORG_BRIDGE_IDLE_SECONDS = _environment.SYNTHORG_BRIDGE_IDLE_SECONDS
SYNTHORG_BRIDGE_POOL_SIZE = _environment.SYNTHORG_BRIDGE_POOL_SIZE
SYNTHORG_BRIDGE_MAX_OUTPUT_BYTES = _environment.SYNTHORG_BRIDGE_MAX_OUTPUT_BYTES
# One answer of a remote (http) MCP server: a JSON body, or one event of a stream. Past it
# the request fails; an output at SYNTHORG_BRIDGE_MAX_OUTPUT_BYTES, escaped, fits well below.
SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES = _environment.SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES
SYNTHORG_BRIDGE_START_SECONDS = _environment.SYNTHORG_BRIDGE_START_SECONDS
SYNTHORG_BRIDGE_CANCEL_POLL_SECONDS = _environment.SYNTHORG_BRIDGE_CANCEL_POLL_SECONDS
SYNTHORG_DESKTOP_ACT_ORDER_SECONDS = _environment.SYNTHORG_DESKTOP_ACT_ORDER_SECONDS
# After a call, how long the bridge waits for a networked server's open connections to
# end, so their audit rows carry that call's invocation (else they are written later).
SYNTHORG_BRIDGE_EGRESS_SETTLE_SECONDS = _environment.SYNTHORG_BRIDGE_EGRESS_SETTLE_SECONDS

# Tool calls (numbers are settings, with safe defaults).
SYNTHORG_APPROVAL_TTL_SECONDS = _environment.SYNTHORG_APPROVAL_TTL_SECONDS
# The largest frame the inbox's socket sends on (re)connect; a larger inbox goes in
# several (daphne refuses to send a message past 1 MiB).
SYNTHORG_INBOX_FRAME_BYTES = _environment.SYNTHORG_INBOX_FRAME_BYTES
# How long the inbox's socket waits for the page to say which rows it shows before it
# sends the whole inbox, and how many rows such a message may list.
SYNTHORG_INBOX_HAVE_WAIT_SECONDS = _environment.SYNTHORG_INBOX_HAVE_WAIT_SECONDS
# How often an operator's live socket checks that its updates still reach it.
SYNTHORG_LIVE_CHECK_SECONDS = _environment.SYNTHORG_LIVE_CHECK_SECONDS
SYNTHORG_INBOX_HAVE_MAX_ROWS = _environment.SYNTHORG_INBOX_HAVE_MAX_ROWS

# Notifications (config section `notifications`): the console's address for links in
# messages, and how deliveries are sent and retried.
SYNTHORG_CONSOLE_URL = (
    _environment.SYNTHORG_CONSOLE_URL
    if _environment.SYNTHORG_CONSOLE_URL is not None
    else f"http://127.0.0.1:{PORT}"
)
SYNTHORG_NOTIFICATION_TIMEOUT_SECONDS = _environment.SYNTHORG_NOTIFICATION_TIMEOUT_SECONDS
SYNTHORG_NOTIFICATION_RETRY_SECONDS = _environment.SYNTHORG_NOTIFICATION_RETRY_SECONDS
SYNTHORG_NOTIFICATION_MAX_ATTEMPTS = _environment.SYNTHORG_NOTIFICATION_MAX_ATTEMPTS
# Email channels use Django's mail backends: EMAIL_URL such as smtp+tls://user:pass@host:587
# (the console backend, which prints each message to the log, until one is set).
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="synthorg@localhost")
SYNTHORG_MAX_REQUEST_BYTES = _environment.SYNTHORG_MAX_REQUEST_BYTES
SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE = _environment.SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE
SYNTHORG_WAIT_MAX_SECONDS = 60
SYNTHORG_RESULT_MAX_CHARS = _environment.SYNTHORG_RESULT_MAX_CHARS
# An error message or a reason relayed to an agent is cut to this many characters.
SYNTHORG_ERROR_MAX_CHARS = _environment.SYNTHORG_ERROR_MAX_CHARS
# Known secrets (and their encoded spellings) shorter than this, whitespace not
# counted, are never looked for: they would match ordinary words and numbers.
SYNTHORG_SECRET_MIN_LENGTH = _environment.SYNTHORG_SECRET_MIN_LENGTH
# The secrets broker: Fernet keys, newest first (comma-separated). Empty outside
# production: a key kept in var/secrets_keys (0600) is made on first use.
SYNTHORG_SECRETS_KEYS = env.list("SYNTHORG_SECRETS_KEYS", default=[])
# Signed checkpoints of the chain's head go here, outside the database, this often.
SYNTHORG_AUDIT_CHECKPOINT_DIR = (
    _environment.SYNTHORG_AUDIT_CHECKPOINT_DIR
    if _environment.SYNTHORG_AUDIT_CHECKPOINT_DIR is not None
    else str(VAR_DIR / "audit-checkpoints")
)
SYNTHORG_AUDIT_CHECKPOINT_SECONDS = _environment.SYNTHORG_AUDIT_CHECKPOINT_SECONDS
# Verification reads events in chunks of this many rows and reports progress per chunk.
SYNTHORG_AUDIT_VERIFY_CHUNK_ROWS = _environment.SYNTHORG_AUDIT_VERIFY_CHUNK_ROWS
# A verification asked for in the console may run this long on a worker (seconds).
SYNTHORG_AUDIT_VERIFY_TIME_LIMIT = _environment.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT
# Filter choices on the audit page (values seen in the log) are kept this long (seconds).
SYNTHORG_AUDIT_FILTER_CHOICES_TTL = _environment.SYNTHORG_AUDIT_FILTER_CHOICES_TTL
# The result count on the audit page stops counting here ("more than N").
SYNTHORG_AUDIT_COUNT_LIMIT = _environment.SYNTHORG_AUDIT_COUNT_LIMIT
# The permission preview decides again the agent's calls of this many days, at most this
# many (the newest), against the candidate settings.
SYNTHORG_PERMISSION_REPLAY_DAYS = _environment.SYNTHORG_PERMISSION_REPLAY_DAYS
SYNTHORG_PERMISSION_REPLAY_CALLS = _environment.SYNTHORG_PERMISSION_REPLAY_CALLS
# Consequence previews: the time one may take, and the window of the agent's earlier
# results (calls, hours, characters of each) searched for its arguments' provenance.
SYNTHORG_PREVIEW_SECONDS = _environment.SYNTHORG_PREVIEW_SECONDS
SYNTHORG_PROVENANCE_CALLS = _environment.SYNTHORG_PROVENANCE_CALLS
SYNTHORG_PROVENANCE_HOURS = _environment.SYNTHORG_PROVENANCE_HOURS
SYNTHORG_PROVENANCE_SCAN_CHARS = _environment.SYNTHORG_PROVENANCE_SCAN_CHARS
# Before a person remembers a pattern: the hours and calls of the agent's history it is
# tried against.
SYNTHORG_PATTERN_REACH_HOURS = _environment.SYNTHORG_PATTERN_REACH_HOURS
SYNTHORG_PATTERN_REACH_CALLS = _environment.SYNTHORG_PATTERN_REACH_CALLS
# The longest value a named secret may hold, in characters.
SYNTHORG_SECRET_MAX_VALUE_CHARS = _environment.SYNTHORG_SECRET_MAX_VALUE_CHARS
SYNTHORG_INVOCATION_LEASE_SECONDS = _environment.SYNTHORG_INVOCATION_LEASE_SECONDS
# An idempotent call whose worker keeps dying is failed after this many attempts.
SYNTHORG_INVOCATION_MAX_ATTEMPTS = _environment.SYNTHORG_INVOCATION_MAX_ATTEMPTS
SYNTHORG_BATCH_MAX_CALLS = _environment.SYNTHORG_BATCH_MAX_CALLS
# How many of one agent's calls run at once unless its own setting says otherwise; the
# calls beyond wait their turn (queued, with their place in line), never refused.
SYNTHORG_AGENT_MAX_CONCURRENT_CALLS = _environment.SYNTHORG_AGENT_MAX_CONCURRENT_CALLS
# A queued call sent to its queue this long ago and still not taken by a worker is sent
# again (the broker was down or lost the message; the claim keeps it exactly-once).
SYNTHORG_DISPATCH_RESEND_SECONDS = _environment.SYNTHORG_DISPATCH_RESEND_SECONDS
# How many calls one worker process supervises at once (threads that wait on sandboxes).
SYNTHORG_WORKER_CALLS = _environment.SYNTHORG_WORKER_CALLS
SYNTHORG_MACHINE = _environment.SYNTHORG_MACHINE
CELERY_WORKER_CONCURRENCY = SYNTHORG_WORKER_CALLS
# /healthz answers within this many seconds; a part that has not answered by then is down.
SYNTHORG_HEALTH_DEADLINE_SECONDS = _environment.SYNTHORG_HEALTH_DEADLINE_SECONDS
# How long an MCP tools/call waits for a person to decide before answering "pending".
# 50 s: below the 60 s request timeout of the common MCP clients (TypeScript SDK,
# Inspector), so they receive the "pending" answer instead of timing out first.
SYNTHORG_MCP_APPROVAL_WAIT_SECONDS = _environment.SYNTHORG_MCP_APPROVAL_WAIT_SECONDS
# How often a tools/call that waits sends a progress notification (progressToken given).
SYNTHORG_MCP_PROGRESS_INTERVAL_SECONDS = _environment.SYNTHORG_MCP_PROGRESS_INTERVAL_SECONDS
# A waiting tools/call's answer is never silent longer than this (below clients' read timeouts).
SYNTHORG_MCP_KEEPALIVE_SECONDS = _environment.SYNTHORG_MCP_KEEPALIVE_SECONDS
# A notifications/cancelled marked this long before its request arrived (clocks of
# different web nodes) still cancels it; an older mark was for an earlier request.
SYNTHORG_MCP_CANCEL_SKEW_SECONDS = _environment.SYNTHORG_MCP_CANCEL_SKEW_SECONDS
DATA_UPLOAD_MAX_MEMORY_SIZE = SYNTHORG_MAX_REQUEST_BYTES
# JSON bodies nested deeper than this are refused (400) before anything reads them.
SYNTHORG_JSON_MAX_DEPTH = _environment.SYNTHORG_JSON_MAX_DEPTH
# Refusals of the HTTP layer (bad JSON, 404, 405, 413, 415, ...) are audited one by one
# up to this many per client per minute; beyond it they are counted in one summary event.
SYNTHORG_REFUSAL_AUDIT_PER_MINUTE = _environment.SYNTHORG_REFUSAL_AUDIT_PER_MINUTE
# MCP bridge: a scan finding of an upstream tool's definition at or above this severity
# (info, low, medium, high, critical) holds the tool for an admin, even on first sight.
SYNTHORG_BRIDGE_HOLD_SEVERITY = _environment.SYNTHORG_BRIDGE_HOLD_SEVERITY
SYNTHORG_BRIDGE_REASON_MAX_CHARS = _environment.SYNTHORG_BRIDGE_REASON_MAX_CHARS
# /api/ and /mcp/ answer a failed CSRF check in the error envelope; pages get the console's.
CSRF_FAILURE_VIEW = "synthorg_site.http_edge.views.csrf_failure"

# Agent tokens: days until a new token expires (0: never), and how long a rotated
# token stays valid beside the one that replaced it (default, and the most allowed).
SYNTHORG_AGENT_TOKEN_TTL_DAYS = _environment.SYNTHORG_AGENT_TOKEN_TTL_DAYS
SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_SECONDS = (
    _environment.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_SECONDS
)
SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS = (
    _environment.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS
)
# How long a new token waits, sealed in the admin's session, for the one page that shows it.
SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS = _environment.SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS
# GET /metrics: a request straight from loopback may scrape without a token (its peer is
# loopback and no header says a proxy forwarded it). Off: a token is always needed.
SYNTHORG_METRICS_ALLOW_LOOPBACK = _environment.SYNTHORG_METRICS_ALLOW_LOOPBACK
# Proxies (addresses or networks) whose X-Forwarded-For names the client, read from the
# right; empty: the socket's peer is the client (synthorg_site/http_edge/client_address.py).
SYNTHORG_TRUSTED_PROXIES = _environment.SYNTHORG_TRUSTED_PROXIES
# Histogram buckets (seconds): decisions and sandbox starts, then whole calls.
SYNTHORG_METRICS_LATENCY_BUCKETS = _environment.SYNTHORG_METRICS_LATENCY_BUCKETS
SYNTHORG_METRICS_CALL_BUCKETS = _environment.SYNTHORG_METRICS_CALL_BUCKETS

# The egress proxy a sandboxed command reaches the network through (tools_app.egress).
# A client must name its destination within the handshake time; a destination must
# resolve and accept within the connect time; a connection with nothing moving for the
# idle time, or older than its maximum, or past its byte budget (both ways) is cut.
SYNTHORG_EGRESS_HANDSHAKE_TIMEOUT_SECONDS = _environment.SYNTHORG_EGRESS_HANDSHAKE_TIMEOUT_SECONDS
SYNTHORG_EGRESS_CONNECT_TIMEOUT_SECONDS = _environment.SYNTHORG_EGRESS_CONNECT_TIMEOUT_SECONDS
SYNTHORG_EGRESS_IDLE_TIMEOUT_SECONDS = _environment.SYNTHORG_EGRESS_IDLE_TIMEOUT_SECONDS
SYNTHORG_EGRESS_MAX_CONNECTION_SECONDS = _environment.SYNTHORG_EGRESS_MAX_CONNECTION_SECONDS
SYNTHORG_EGRESS_MAX_BYTES_PER_CONNECTION = _environment.SYNTHORG_EGRESS_MAX_BYTES_PER_CONNECTION
# Connections open at once through one call's proxy, and connections one call may open
# with an audit row each (beyond it they are refused and counted in one summary row).
SYNTHORG_EGRESS_MAX_CONNECTIONS = _environment.SYNTHORG_EGRESS_MAX_CONNECTIONS
SYNTHORG_EGRESS_MAX_AUDITED_CONNECTIONS = _environment.SYNTHORG_EGRESS_MAX_AUDITED_CONNECTIONS
# The proxy's resolver: the system's, or this DNS server (an IP address) when set.
SYNTHORG_EGRESS_DNS_SERVER = _environment.SYNTHORG_EGRESS_DNS_SERVER
SYNTHORG_EGRESS_DNS_PORT = _environment.SYNTHORG_EGRESS_DNS_PORT
# Sealed secrets over HTTPS: the proxy verifies the real server against the system's
# roots, or this file's when set (an internal authority of the organisation).
SYNTHORG_EGRESS_UPSTREAM_CA_FILE = _environment.SYNTHORG_EGRESS_UPSTREAM_CA_FILE

REST_FRAMEWORK: dict[str, object] = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["common.json_parser.StrictJSONParser"],
    "EXCEPTION_HANDLER": "tools_app.api.errors.api_exception_handler",
    # JSON is the only answer; an Accept header asking for something else still gets it.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "tools_app.api.errors.JsonOnlyNegotiation",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "SynthOrg Console API",
    "DESCRIPTION": "Governed tool calls for AI agents.",
    "VERSION": "1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "synthorg_site.http_edge.openapi.error_responses_hook",
    ],
}

LOG_FORMAT = env.str("LOG_FORMAT", default="json" if SYNTHORG_ENV == "production" else "console")
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOGGING_CONFIG = None
logging_config(fmt=LOG_FORMAT, level=LOG_LEVEL)

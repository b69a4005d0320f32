"""The console's SYNTHORG_* settings from the environment: each typed, each number in a range.

One model reads them all (pydantic-settings, from ``os.environ``); a value of the wrong
type or outside its range refuses to start, naming the variable, the value given and
what is allowed (``SYNTHORG_X=-1 is not allowed: must be >= 1``). The defaults are the
console's defaults; ``synthorg_site/settings.py`` copies each field to the Django
setting of the same name. Pure: no Django imports.

Variables whose default depends on other settings (``SYNTHORG_CONFIG``,
``SYNTHORG_CONSOLE_URL``, ``SYNTHORG_AUDIT_CHECKPOINT_DIR``) are ``None`` here when
unset, and settings.py supplies the default.
"""

from __future__ import annotations

import itertools
import math
import os
from typing import Annotated, Any

import annotated_types
from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from common.platform.client_address import TrustedProxiesError, trusted_networks

_KIB = 1024
_MIB = 1024 * _KIB
_GIB = 1024 * _MIB
_MINUTE = 60
_HOUR = 3600
_DAY = 86400

# django-environ's spellings of true (which the console read before); these of false.
_TRUE = frozenset({"true", "on", "ok", "y", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "n", "0", ""})


class EnvironmentSettingError(ValueError):
    """One or more SYNTHORG_* variables hold a value the console does not accept."""


def _boolean(value: Any) -> Any:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueError("not a boolean")
    return value


def _number_list(value: Any) -> Any:
    # Comma-separated, empty items skipped (as django-environ's env.list read them).
    if isinstance(value, str):
        return [item for item in value.split(",") if item.strip()]
    return value


def _increasing(values: list[float]) -> list[float]:
    if not values:
        raise ValueError("empty")
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise ValueError("not increasing")
    return values


def _text_list(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def _networks(values: list[str]) -> list[str]:
    try:
        trusted_networks(values)
    except TrustedProxiesError as exc:
        raise ValueError(str(exc)) from None
    return values


Flag = Annotated[bool, BeforeValidator(_boolean)]
# IP addresses and networks, comma-separated; each checked at start.
Networks = Annotated[list[str], NoDecode, BeforeValidator(_text_list), AfterValidator(_networks)]
# Histogram buckets in seconds: at least one, each above 0, in increasing order.
Buckets = Annotated[
    list[Annotated[float, Field(gt=0)]],
    NoDecode,
    BeforeValidator(_number_list),
    AfterValidator(_increasing),
]

_BUCKETS_ALLOWED = "a comma-separated list of numbers > 0 in increasing order"


class PlatformEnvironment(BaseSettings):
    """Every SYNTHORG_* setting read from the environment, with its type, default and range.

    Field names are the variable names (case-sensitive, no prefix). Seconds are floats
    where the console always read a float; counts and sizes are whole numbers.
    """

    model_config = SettingsConfigDict(
        case_sensitive=True,
        extra="ignore",
        allow_inf_nan=False,
        validate_default=True,
    )

    # Redis (see common/platform/redis_options.py: the read timeout must also outlast
    # the channel layer's blocking read, checked there).
    SYNTHORG_REDIS_SOCKET_TIMEOUT: float = Field(default=15.0, gt=0, le=_HOUR)
    SYNTHORG_REDIS_CONNECT_TIMEOUT: float = Field(default=5.0, gt=0, le=5 * _MINUTE)
    SYNTHORG_REDIS_HEALTH_CHECK_INTERVAL: float = Field(default=30.0, ge=0, le=_HOUR)  # 0: off
    SYNTHORG_REDIS_COMMAND_TIMEOUT: float = Field(default=2.0, gt=0, le=5 * _MINUTE)

    # Heartbeats of workers, and the sandbox probe.
    SYNTHORG_HEARTBEAT_INTERVAL: float = Field(default=2.0, gt=0, le=5 * _MINUTE)
    SYNTHORG_HEARTBEAT_MAX_AGE: float = Field(default=10.0, gt=0, le=_HOUR)
    SYNTHORG_SANDBOX_PROBE_INTERVAL: float = Field(default=300.0, ge=1, le=_DAY)

    # MCP bridge.
    SYNTHORG_BRIDGE_CATALOG_TTL_SECONDS: float = Field(default=2.0, ge=0, le=_HOUR)
    SYNTHORG_BRIDGE_HEALTH_INTERVAL: float = Field(default=60.0, ge=1, le=_DAY)
    SYNTHORG_BRIDGE_IDLE_SECONDS: float = Field(default=300.0, ge=0, le=_DAY)
    SYNTHORG_BRIDGE_POOL_SIZE: int = Field(default=8, ge=1, le=1024)
    SYNTHORG_BRIDGE_MAX_OUTPUT_BYTES: int = Field(default=_MIB, ge=_KIB, le=256 * _MIB)
    SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES: int = Field(default=4 * _MIB, ge=_KIB, le=_GIB)
    SYNTHORG_BRIDGE_START_SECONDS: float = Field(default=30.0, gt=0, le=_HOUR)
    SYNTHORG_BRIDGE_CANCEL_POLL_SECONDS: float = Field(default=0.5, gt=0, le=_MINUTE)
    SYNTHORG_BRIDGE_EGRESS_SETTLE_SECONDS: float = Field(default=0.5, ge=0, le=_MINUTE)
    # info, low, medium, high, critical; an invalid one holds every tool (fail closed,
    # tools_app/bridge/pinning.py), so it is kept as a string here.
    SYNTHORG_BRIDGE_HOLD_SEVERITY: str = "high"
    SYNTHORG_BRIDGE_REASON_MAX_CHARS: int = Field(default=1000, ge=1, le=100_000)
    # A person's desktop action waits at most this long for their earlier ones to run
    # (one lost with a worker is not waited for longer).
    SYNTHORG_DESKTOP_ACT_ORDER_SECONDS: float = Field(default=10.0, ge=0, le=_HOUR)

    # Approvals and the inbox (daphne sends at most 1 MiB in one frame).
    SYNTHORG_APPROVAL_TTL_SECONDS: int = Field(default=900, ge=1, le=30 * _DAY)
    SYNTHORG_INBOX_FRAME_BYTES: int = Field(default=256 * _KIB, ge=_KIB, le=_MIB)
    SYNTHORG_INBOX_HAVE_WAIT_SECONDS: float = Field(default=5.0, ge=0, le=_MINUTE)
    SYNTHORG_LIVE_CHECK_SECONDS: float = Field(default=5.0, gt=0, le=_MINUTE)
    SYNTHORG_INBOX_HAVE_MAX_ROWS: int = Field(default=20_000, ge=1, le=1_000_000)

    # Notifications.
    SYNTHORG_CONSOLE_URL: str | None = None  # default: http://127.0.0.1:$PORT
    SYNTHORG_NOTIFICATION_TIMEOUT_SECONDS: float = Field(default=10.0, gt=0, le=5 * _MINUTE)
    SYNTHORG_NOTIFICATION_RETRY_SECONDS: float = Field(default=15.0, gt=0, le=_DAY)
    SYNTHORG_NOTIFICATION_MAX_ATTEMPTS: int = Field(default=8, ge=1, le=100)

    # Requests, results and limits of tool calls.
    SYNTHORG_MAX_REQUEST_BYTES: int = Field(default=_MIB, ge=_KIB, le=_GIB)
    SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE: int = Field(default=1200, ge=1, le=10_000_000)
    SYNTHORG_RESULT_MAX_CHARS: int = Field(default=200_000, ge=100, le=100_000_000)
    SYNTHORG_ERROR_MAX_CHARS: int = Field(default=2000, ge=100, le=1_000_000)
    SYNTHORG_SECRET_MIN_LENGTH: int = Field(default=8, ge=4, le=1024)
    SYNTHORG_SECRET_MAX_VALUE_CHARS: int = Field(default=16384, ge=1, le=16 * _MIB)
    SYNTHORG_INVOCATION_LEASE_SECONDS: float = Field(default=10.0, ge=1, le=_HOUR)
    SYNTHORG_INVOCATION_MAX_ATTEMPTS: int = Field(default=3, ge=1, le=100)
    SYNTHORG_AGENT_MAX_CONCURRENT_CALLS: int = Field(default=4, ge=1, le=10_000)
    SYNTHORG_DISPATCH_RESEND_SECONDS: float = Field(default=30.0, ge=1, le=_DAY)
    SYNTHORG_WORKER_CALLS: int = Field(default=256, ge=1, le=10_000)
    # This worker's machine, for work bound to one (desktop sessions); the host name when
    # empty. Workers sharing a machine must give the same name.
    SYNTHORG_MACHINE: str = Field(default="", pattern=r"^[A-Za-z0-9._-]{0,64}$")
    SYNTHORG_HEALTH_DEADLINE_SECONDS: float = Field(default=2.0, gt=0, le=_MINUTE)
    SYNTHORG_BATCH_MAX_CALLS: int = Field(default=50, ge=1, le=10_000)
    SYNTHORG_JSON_MAX_DEPTH: int = Field(default=32, ge=1, le=1000)
    SYNTHORG_REFUSAL_AUDIT_PER_MINUTE: int = Field(
        default=20, ge=0, le=100_000
    )  # 0: summaries only

    # MCP endpoint.
    SYNTHORG_MCP_APPROVAL_WAIT_SECONDS: int = Field(default=50, ge=0, le=_HOUR)
    SYNTHORG_MCP_PROGRESS_INTERVAL_SECONDS: float = Field(default=5.0, gt=0, le=_HOUR)
    SYNTHORG_MCP_KEEPALIVE_SECONDS: float = Field(default=2.0, gt=0, le=_MINUTE)
    SYNTHORG_MCP_CANCEL_SKEW_SECONDS: float = Field(default=2.0, ge=0, le=_HOUR)

    # The audit chain.
    SYNTHORG_AUDIT_CHECKPOINT_DIR: str | None = None  # default: $SYNTHORG_VAR_DIR/audit-checkpoints
    SYNTHORG_AUDIT_CHECKPOINT_SECONDS: float = Field(default=300.0, ge=1, le=7 * _DAY)
    SYNTHORG_AUDIT_VERIFY_CHUNK_ROWS: int = Field(default=5000, ge=1, le=1_000_000)
    SYNTHORG_AUDIT_VERIFY_TIME_LIMIT: int = Field(default=3600, ge=1, le=7 * _DAY)
    SYNTHORG_AUDIT_FILTER_CHOICES_TTL: float = Field(default=30.0, ge=0, le=_DAY)
    SYNTHORG_AUDIT_COUNT_LIMIT: int = Field(default=10_000, ge=1, le=10_000_000)
    # The permission preview replays this many days of an agent's calls, the newest first.
    SYNTHORG_PERMISSION_REPLAY_DAYS: int = Field(default=7, ge=1, le=366)
    SYNTHORG_PERMISSION_REPLAY_CALLS: int = Field(default=5000, ge=1, le=1_000_000)
    # Consequence previews: the time one may take when a request opens, and the window of
    # the agent's earlier results searched for where a call's argument values came from.
    SYNTHORG_PREVIEW_SECONDS: float = Field(default=3.0, gt=0, le=60)
    SYNTHORG_PROVENANCE_CALLS: int = Field(default=50, ge=0, le=1000)
    SYNTHORG_PROVENANCE_HOURS: int = Field(default=24, ge=1, le=24 * 30)
    SYNTHORG_PROVENANCE_SCAN_CHARS: int = Field(default=65536, ge=1024, le=10_000_000)
    # Before a person remembers a pattern: the agent's calls of the tool looked back on.
    SYNTHORG_PATTERN_REACH_HOURS: int = Field(default=24, ge=1, le=24 * 30)
    SYNTHORG_PATTERN_REACH_CALLS: int = Field(default=2000, ge=1, le=100_000)

    # Agent tokens (TTL 0: never expires).
    SYNTHORG_AGENT_TOKEN_TTL_DAYS: int = Field(default=90, ge=0, le=36_500)
    SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_SECONDS: int = Field(default=_HOUR, ge=0, le=365 * _DAY)
    SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS: int = Field(
        default=30 * _DAY, ge=0, le=365 * _DAY
    )
    SYNTHORG_TOKEN_SHOWN_ONCE_SECONDS: int = Field(default=300, ge=1, le=_DAY)

    # Metrics.
    SYNTHORG_METRICS_ALLOW_LOOPBACK: Flag = True
    SYNTHORG_METRICS_LATENCY_BUCKETS: Buckets = Field(
        default_factory=lambda: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                                 2.5, 5.0],
        json_schema_extra={"allowed": _BUCKETS_ALLOWED},
    )  # fmt: skip
    SYNTHORG_METRICS_CALL_BUCKETS: Buckets = Field(
        default_factory=lambda: [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                                 300.0, 900.0],
        json_schema_extra={"allowed": _BUCKETS_ALLOWED},
    )  # fmt: skip

    # Proxies whose X-Forwarded-For is believed (common/platform/client_address.py).
    SYNTHORG_TRUSTED_PROXIES: Networks = Field(
        default_factory=list,
        json_schema_extra={
            "allowed": "comma-separated IP addresses or networks (e.g. 10.0.0.5,10.1.0.0/16)"
        },
    )

    # Sign-in throttle (trust_app/signin): failures per account from one address, and per
    # address, within the window; the first lock's length, doubled per lock up to the most.
    SYNTHORG_SIGNIN_ACCOUNT_FAILURES: int = Field(default=5, ge=1, le=1000)
    SYNTHORG_SIGNIN_ADDRESS_FAILURES: int = Field(default=20, ge=1, le=100_000)
    SYNTHORG_SIGNIN_WINDOW_SECONDS: int = Field(default=900, ge=1, le=_DAY)
    SYNTHORG_SIGNIN_LOCK_SECONDS: int = Field(default=60, ge=1, le=_DAY)
    SYNTHORG_SIGNIN_LOCK_MAX_SECONDS: int = Field(default=900, ge=1, le=_DAY)

    # The egress proxy of sandboxed commands.
    SYNTHORG_EGRESS_HANDSHAKE_TIMEOUT_SECONDS: float = Field(default=10.0, gt=0, le=_HOUR)
    SYNTHORG_EGRESS_CONNECT_TIMEOUT_SECONDS: float = Field(default=10.0, gt=0, le=_HOUR)
    SYNTHORG_EGRESS_IDLE_TIMEOUT_SECONDS: float = Field(default=60.0, gt=0, le=_DAY)
    SYNTHORG_EGRESS_MAX_CONNECTION_SECONDS: float = Field(default=600.0, gt=0, le=_DAY)
    SYNTHORG_EGRESS_MAX_BYTES_PER_CONNECTION: int = Field(default=_GIB, ge=1, le=1024 * _GIB)
    SYNTHORG_EGRESS_MAX_CONNECTIONS: int = Field(default=64, ge=1, le=65_535)
    SYNTHORG_EGRESS_MAX_AUDITED_CONNECTIONS: int = Field(default=1000, ge=0, le=1_000_000)
    SYNTHORG_EGRESS_DNS_SERVER: str = ""  # empty: the system's resolver
    # Sealed HTTPS: the roots the proxy verifies real servers against (empty: the system's).
    SYNTHORG_EGRESS_UPSTREAM_CA_FILE: str = ""
    SYNTHORG_EGRESS_DNS_PORT: int = Field(default=53, ge=1, le=65_535)

    # The YAML policy file (default: synthorg.yaml beside manage.py).
    SYNTHORG_CONFIG: str | None = None

    @model_validator(mode="after")
    def _overlap_within_its_maximum(self) -> PlatformEnvironment:
        overlap = self.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_SECONDS
        most = self.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS
        if overlap > most:
            raise EnvironmentSettingError(
                f"SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_SECONDS={overlap} is not allowed: must "
                f"be <= SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS ({most})"
            )
        return self

    @model_validator(mode="after")
    def _first_lock_within_the_longest(self) -> PlatformEnvironment:
        first, most = self.SYNTHORG_SIGNIN_LOCK_SECONDS, self.SYNTHORG_SIGNIN_LOCK_MAX_SECONDS
        if first > most:
            raise EnvironmentSettingError(
                f"SYNTHORG_SIGNIN_LOCK_SECONDS={first} is not allowed: must be <= "
                f"SYNTHORG_SIGNIN_LOCK_MAX_SECONDS ({most})"
            )
        return self


_KINDS: tuple[tuple[type, str], ...] = (
    (int, "a whole number"),
    (float, "a number"),
    (bool, "a boolean (true/false, on/off, yes/no, 1/0)"),
)
_BOUNDS = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


def _fmt(bound: object) -> str:
    if isinstance(bound, float) and bound.is_integer() and not math.isinf(bound):
        return str(int(bound))
    return str(bound)


def allowed(field: FieldInfo) -> str:
    """What a field accepts, in words: its type and its range (e.g. 'a whole number >= 1')."""
    extra = field.json_schema_extra
    if isinstance(extra, dict) and isinstance(extra.get("allowed"), str):
        return str(extra["allowed"])
    bounds = []
    for item in field.metadata:
        for kind, attr, sign in _BOUNDS:
            if isinstance(item, kind):
                bounds.append(f"{sign} {_fmt(getattr(item, attr))}")
    kind_words = next((words for kind, words in _KINDS if field.annotation is kind), "")
    return " ".join([w for w in (kind_words, " and ".join(bounds)) if w]) or "a string"


def _given(value: object) -> str:
    if isinstance(value, str):
        return value if value and value.strip() == value else repr(value)
    if isinstance(value, float):
        return _fmt(value)
    return str(value)


def describe(error: ValidationError) -> list[str]:
    """One line per refused variable: ``NAME=VALUE is not allowed: must be RANGE``."""
    fields = PlatformEnvironment.model_fields
    lines: list[str] = []
    seen: set[str] = set()
    for item in error.errors(include_url=False):
        name = str(item["loc"][0]) if item["loc"] else ""
        if name in fields:
            if name in seen:
                continue
            seen.add(name)
            lines.append(
                f"{name}={_given(_raw(name, item))} is not allowed: must be {allowed(fields[name])}"
            )
        else:
            # A check across variables: its message names them.
            ctx_error = (item.get("ctx") or {}).get("error")
            lines.append(str(ctx_error) if ctx_error else item["msg"])
    return lines


def _raw(name: str, item: Any) -> object:
    # The whole value given (an error of a list item carries only that item).
    return os.environ.get(name, item["input"])


def load_environment() -> PlatformEnvironment:
    """This process's SYNTHORG_* settings; EnvironmentSettingError names each bad one."""
    try:
        return PlatformEnvironment()
    except ValidationError as exc:
        raise EnvironmentSettingError("\n".join(describe(exc))) from None

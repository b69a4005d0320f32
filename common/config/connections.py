"""``connections``: external APIs an agent reaches through ``external_data_request``.

Each connection fixes the host (``base_url``), the credential the console adds
(``auth``: a stored secret and how it is injected), the operations an agent may
call (a method and a path pattern, each ``read`` or ``write``), the limits
shared by every agent (``rate_limit``, ``max_concurrency``, ``max_response_bytes``),
and those each agent has on its own within them (``per_agent: {rate_limit,
max_concurrency}``).

Path patterns are relative to the base URL's path: literal segments, ``{name}`` or
``*`` for exactly one segment, and a final ``**`` for any number of further
segments (``/invoices/{id}``, ``/files/**``).

Instead of listing ``operations``, a connection may name an OpenAPI 3 document
(``openapi``: a file, relative to the config file's folder), from which they are
derived (``common.config.openapi``), with ``operation_overrides`` per operation.

``redact`` (on the connection, on an operation, or in an override) lists JSON
pointers (RFC 6901) to response fields the agent never sees; a ``*`` token stands for
every item of an array or every member of an object (``/data/*/ssn``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from pydantic import (
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from common.config.openapi import (
    OpenApiDocumentError,
    apply_overrides,
    document_operations,
    document_path,
    read_document,
)
from common.strict import StrictModel
from common.vocabulary.network import NetworkTargetError, parse_host_rule
from common.vocabulary.sealing import SealingRuleError, parse_injection

CONNECTION_METHODS: Final = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
READ_METHODS: Final = ("GET", "HEAD", "OPTIONS")
MAX_REDACTIONS: Final = 64
DEFAULT_MAX_RESPONSE_BYTES: Final = 1024 * 1024
DEFAULT_MAX_CONCURRENCY: Final = 4
_NAME: Final = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_RATE: Final = re.compile(r"\s*(\d{1,6})\s*/\s*(s|sec|second|min|minute|h|hour)\s*")
_RATE_WINDOWS: Final = {
    "s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
}  # fmt: skip
# One literal segment of a pattern: unreserved and sub-delimiter characters, no '%'.
_LITERAL: Final = re.compile(r"[A-Za-z0-9._~!$&'()+,;=:@-]+")
_PLACEHOLDER: Final = re.compile(r"\{[A-Za-z_][A-Za-z0-9_.-]{0,62}\}")
_OPERATION_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,62}")
WILDCARD_TOKEN: Final = "*"
ONE_SEGMENT: Final = "*"
ANY_SEGMENTS: Final = "**"


def pattern_segments(pattern: str) -> tuple[str, ...]:
    """The segments of a path pattern, ``{name}`` folded to ``*``; ValueError says what
    is wrong."""
    if not pattern.startswith("/"):
        raise ValueError(f"path pattern {pattern!r} must start with '/'")
    if pattern == "/":
        return ()
    parts = pattern[1:].split("/")
    segments: list[str] = []
    for index, part in enumerate(parts):
        if part == ANY_SEGMENTS:
            if index != len(parts) - 1:
                raise ValueError(f"path pattern {pattern!r}: '**' may only be the last segment")
            segments.append(ANY_SEGMENTS)
        elif part == ONE_SEGMENT or _PLACEHOLDER.fullmatch(part):
            segments.append(ONE_SEGMENT)
        elif part in ("", ".", "..") or not _LITERAL.fullmatch(part):
            raise ValueError(
                f"path pattern {pattern!r}: segment {part!r} is not allowed (literal "
                "segments use letters, digits and ._~!$&'()+,;=:@-; '{name}' or '*' for one "
                "segment, a final '**' for the rest)"
            )
        else:
            segments.append(part)
    return tuple(segments)


class ConnectionAuth(StrictModel):
    """``auth``: the stored secret (``synthorg_secret set NAME``) and its injection."""

    secret: StrictStr = Field(min_length=1, max_length=128)
    scheme: StrictStr = "bearer"

    @field_validator("scheme")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        try:
            return parse_injection(value).display()
        except SealingRuleError as exc:
            raise ValueError(str(exc)) from exc


def parse_pointer(text: str) -> tuple[str, ...]:
    """A JSON pointer (RFC 6901) → its unescaped tokens; ValueError says what is wrong.
    ``""`` is the whole document."""
    if text == "":
        return ()
    if not text.startswith("/"):
        raise ValueError(f"JSON pointer {text!r} must be empty or start with '/'")
    tokens = []
    for raw in text[1:].split("/"):
        if re.search(r"~(?![01])", raw):
            raise ValueError(f"JSON pointer {text!r}: '~' must be followed by 0 or 1")
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    return tuple(tokens)


def _pointers(value: tuple[str, ...]) -> tuple[str, ...]:
    if len(value) > MAX_REDACTIONS:
        raise ValueError(f"redact lists at most {MAX_REDACTIONS} pointers")
    for pointer in value:
        parse_pointer(pointer)
    return value


class ConnectionOperation(StrictModel):
    """One operation an agent may call: a method and a path pattern."""

    method: Literal["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"]
    path: StrictStr = Field(min_length=1, max_length=512)
    kind: Literal["read", "write"] | None = None
    """``read`` or ``write``; left out, GET, HEAD and OPTIONS are reads and the rest
    writes."""
    sensitive: StrictBool = False
    name: StrictStr | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$")
    """The operation's name in grants (``connection:name``); none: ``METHOD /path``."""
    redact: tuple[StrictStr, ...] = ()
    """JSON pointers to fields of this operation's responses the agent never sees."""

    @field_validator("path")
    @classmethod
    def _pattern(cls, value: str) -> str:
        pattern_segments(value)
        return value

    @field_validator("redact")
    @classmethod
    def _redact(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _pointers(value)

    @property
    def resolved_kind(self) -> str:
        if self.kind is not None:
            return self.kind
        return "read" if self.method in READ_METHODS else "write"

    @property
    def label(self) -> str:
        """How a grant and a record name this operation."""
        return self.name or f"{self.method} {self.path}"

    @property
    def asks_a_person(self) -> bool:
        """Writes and sensitive operations wait for a person's approval."""
        return self.resolved_kind == "write" or self.sensitive


class OperationOverride(StrictModel):
    """A change to one operation imported from an OpenAPI document."""

    kind: Literal["read", "write"] | None = None
    sensitive: StrictBool | None = None
    enabled: StrictBool = True
    """False: the operation is switched off (not offered, refused when called)."""
    name: StrictStr | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$")
    redact: tuple[StrictStr, ...] | None = None

    @field_validator("redact")
    @classmethod
    def _redact(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else _pointers(value)


def _imported_operations(data: Mapping[str, Any], base_dir: Path | None) -> list[dict[str, Any]]:
    """The operations of the connection's ``openapi`` document, overrides applied."""
    if data.get("operations"):
        raise ValueError("give either operations or openapi, not both")
    file = data["openapi"]
    if not isinstance(file, str) or not file.strip():
        raise ValueError("openapi must be the path of an OpenAPI 3 document (JSON or YAML)")
    overrides = data.get("operation_overrides") or {}
    if not isinstance(overrides, Mapping):
        raise ValueError("operation_overrides must map operationId or 'METHOD /path' to changes")
    checked = {}
    for key, change in overrides.items():
        try:
            checked[str(key)] = OperationOverride.model_validate(change).model_dump(
                exclude_none=True
            )
        except ValueError as exc:
            raise ValueError(f"operation_overrides[{key!r}]: {exc}") from None
    path = document_path(file, base_dir)
    try:
        found = document_operations(read_document(path), source=str(path))
        found = apply_overrides(found, checked, source=str(path))
    except OpenApiDocumentError as exc:
        raise ValueError(str(exc)) from None
    operations = []
    for entry in found:
        operation_id = entry.pop("operation_id", None)
        if "name" not in entry and operation_id and _OPERATION_NAME.fullmatch(operation_id):
            entry["name"] = operation_id
        try:
            pattern_segments(entry["path"])
        except ValueError as exc:
            raise ValueError(
                f"openapi document {path}: {exc}; switch the operation off with "
                f"operation_overrides: {{'{entry['method']} {entry['path']}': "
                "{enabled: false}}"
            ) from None
        operations.append(entry)
    if not operations:
        raise ValueError(f"openapi document {path} leaves no operation switched on")
    return operations


class PerAgentLimits(StrictModel):
    """``per_agent``: limits each agent has on its own on a connection, within the limits
    of every agent together."""

    rate_limit: StrictStr | None = None
    """``N/min`` (also ``N/s``, ``N/hour``): one agent's requests."""
    max_concurrency: StrictInt | None = Field(default=None, ge=1, le=1000)
    """One agent's requests in flight at once."""

    @field_validator("rate_limit")
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None:
            parse_rate(value)
        return value

    @property
    def rate(self) -> tuple[int, int] | None:
        return None if self.rate_limit is None else parse_rate(self.rate_limit)


class Connection(StrictModel):
    """One external API."""

    name: StrictStr
    base_url: StrictStr = Field(min_length=1, max_length=2048)
    auth: ConnectionAuth | None = None
    operations: tuple[ConnectionOperation, ...] = Field(min_length=1)
    openapi: StrictStr | None = None
    """An OpenAPI 3 document (JSON or YAML) the operations are derived from."""
    operation_overrides: dict[StrictStr, OperationOverride] = Field(default_factory=dict)
    redact: tuple[StrictStr, ...] = ()
    """JSON pointers to fields of every response the agent never sees."""
    rate_limit: StrictStr | None = None
    """``N/min`` (also ``N/s``, ``N/hour``): requests of every agent together."""
    max_concurrency: StrictInt = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, le=1000)
    per_agent: PerAgentLimits | None = None
    """Limits of each agent on its own (``rate_limit``, ``max_concurrency``)."""
    max_response_bytes: StrictInt = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES, ge=1, le=64 * 1024 * 1024
    )
    timeout_seconds: float = Field(default=30.0, gt=0, le=300)
    private_network: StrictBool = False
    """True lets the base URL's host be a private or loopback address (an internal API)."""

    @model_validator(mode="before")
    @classmethod
    def _from_openapi(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping) or data.get("openapi") is None:
            if isinstance(data, Mapping) and data.get("operation_overrides"):
                raise ValueError("operation_overrides apply only with openapi")
            return data
        context = info.context if isinstance(info.context, Mapping) else {}
        base_dir = context.get("config_dir")
        operations = _imported_operations(data, Path(base_dir) if base_dir else None)
        return {**data, "operations": operations}

    @field_validator("redact")
    @classmethod
    def _redact(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _pointers(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(
                f"connection name {value!r}: lowercase letters, digits, '_' and '-', "
                "starting with a letter (at most 63)"
            )
        return value

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url {value!r} must be an absolute http(s) URL")
        if parts.username is not None or parts.password is not None:
            raise ValueError("base_url must not carry user information; use auth")
        if parts.query or parts.fragment:
            raise ValueError("base_url must not have a query or a fragment")
        try:
            parse_host_rule(parts.netloc)
            _ = parts.port
        except (NetworkTargetError, ValueError) as exc:
            raise ValueError(f"base_url {value!r}: {exc}") from exc
        return value.rstrip("/")

    @field_validator("rate_limit")
    @classmethod
    def _rate(cls, value: str | None) -> str | None:
        if value is not None:
            parse_rate(value)
        return value

    @model_validator(mode="after")
    def _per_agent_within_everyone(self) -> Connection:
        # A per-agent limit that can never hold an agent back is a mistake in the config,
        # not a limit: refuse it rather than show admins a limit that does nothing.
        own = self.per_agent
        if own is None:
            return self
        if own.max_concurrency is not None and own.max_concurrency >= self.max_concurrency:
            raise ValueError(
                f"per_agent.max_concurrency {own.max_concurrency} must be below max_concurrency "
                f"{self.max_concurrency} (every agent together), or it never holds an agent back"
            )
        if own.rate is not None and self.rate is not None:
            (mine, my_window), (everyone, window) = own.rate, self.rate
            if mine >= everyone and my_window <= window:
                raise ValueError(
                    f"per_agent.rate_limit {own.rate_limit} never holds an agent back: "
                    f"rate_limit {self.rate_limit} (every agent together) is stricter; give "
                    "fewer requests or a longer window"
                )
        return self

    @model_validator(mode="after")
    def _distinct_operations(self) -> Connection:
        seen: set[str] = set()
        for operation in self.operations:
            if operation.label in seen:
                raise ValueError(f"operation {operation.label!r} is listed twice")
            seen.add(operation.label)
        return self

    @property
    def host_entry(self) -> str:
        """``host:port`` of the base URL, as the egress guard's lists spell it."""
        parts = urlsplit(self.base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname or ""
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    @property
    def rate(self) -> tuple[int, int] | None:
        """``(requests, window seconds)``, or None without a limit."""
        return None if self.rate_limit is None else parse_rate(self.rate_limit)

    @property
    def agent_rate(self) -> tuple[int, int] | None:
        """Each agent's own ``(requests, window seconds)``, or None without one."""
        return None if self.per_agent is None else self.per_agent.rate

    @property
    def agent_concurrency(self) -> int | None:
        """Each agent's own requests in flight at once, or None without a limit."""
        return None if self.per_agent is None else self.per_agent.max_concurrency

    def operation(self, label: str) -> ConnectionOperation | None:
        return next((op for op in self.operations if op.label == label), None)

    def redactions(self, operation: ConnectionOperation) -> tuple[str, ...]:
        """The pointers redacted from ``operation``'s responses: the connection's and its
        own."""
        return tuple(dict.fromkeys((*self.redact, *operation.redact)))


def parse_rate(text: str) -> tuple[int, int]:
    """``N/min`` → ``(N, 60)``; ValueError names what is allowed."""
    match = _RATE.fullmatch(text)
    if match is None or int(match.group(1)) < 1:
        raise ValueError(f"rate_limit {text!r} must be N/s, N/min or N/hour with N at least 1")
    return int(match.group(1)), _RATE_WINDOWS[match.group(2)]


def check_connection_names(value: tuple[Connection, ...]) -> tuple[Connection, ...]:
    """Refuse two connections with the same name."""
    seen: set[str] = set()
    for connection in value:
        if connection.name in seen:
            raise ValueError(f"connection {connection.name!r} is named twice")
        seen.add(connection.name)
    return value


def parse_grant(entry: str) -> tuple[str, str | None]:
    """A grant entry ``name`` or ``name:operation`` → ``(name, operation or None)``."""
    name, separator, operation = entry.partition(":")
    if not _NAME.fullmatch(name) or (separator and not operation.strip()):
        raise ValueError(
            f"connection grant {entry!r} must be a connection name, or name:operation "
            "(the operation's name, or 'METHOD /path' as configured)"
        )
    return name, operation.strip() if separator else None


def offers_operation(operations: tuple[ConnectionOperation, ...], method: str, path: str) -> bool:
    """True when one of ``operations`` takes ``method`` on the literal ``path`` (a pattern
    that matches it counts): for checking at load what a tool will send."""
    wanted = tuple(path.strip("/").split("/")) if path.strip("/") else ()
    return any(
        operation.method == method and _pattern_takes(pattern_segments(operation.path), wanted)
        for operation in operations
    )


def _pattern_takes(pattern: tuple[str, ...], segments: tuple[str, ...]) -> bool:
    for index, part in enumerate(pattern):
        if part == ANY_SEGMENTS:
            return True
        if index >= len(segments) or part not in (ONE_SEGMENT, segments[index]):
            return False
    return len(pattern) == len(segments)

"""PURE: the database tools' settings, checked strictly, and which connection a call may use.

Connections are named in each tool's own settings, ``tools.<tool>.connections``, so
an admin decides per tool which databases it reaches: ``db_mutate`` usually names a
different (writer) role, or none at all, while ``sql_query`` and ``schema_inspect``
share a list through a YAML anchor::

    tools:
      sql_query:
        connections: &readers
          analytics: {url: "postgresql://reader:secret@db.internal:5432/analytics"}
          local: {url: "sqlite:////srv/data/local.db", agents: [report-bot]}
        max_rows: 500
      schema_inspect: {connections: *readers}

A connection's password is a known secret (``tools_app.secrets``): redacted from
every result, log line and audit row. ``agents`` restricts a connection to those
agent names; a connection the agent may not use is refused exactly like an unknown
one, with HOST_NOT_ALLOWED and the names it may use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from common.strict import StrictModel
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError

DEFAULT_MAX_ROWS: Final = 1000
DEFAULT_STATEMENT_TIMEOUT: Final = 10.0
DEFAULT_CONNECT_TIMEOUT: Final = 5.0
DEFAULT_MAX_QUERY_CHARS: Final = 20_000
DEFAULT_MAX_CELL_CHARS: Final = 4000
DEFAULT_MAX_TABLES: Final = 200
DEFAULT_MEMORY_LIMIT_MB: Final = 256
DEFAULT_MAX_VALUE_BYTES: Final = 16 * 1024 * 1024
DEFAULT_MAX_RESULT_BYTES: Final = 8 * 1024 * 1024
DEFAULT_PROCESS_GRACE_SECONDS: Final = 5.0
_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"


class DatabaseConnection(StrictModel):
    """One named database: its URL, and optionally the only agents that may use it."""

    url: str = Field(min_length=1)
    agents: tuple[str, ...] | None = None

    @field_validator("url")
    @classmethod
    def _supported_url(cls, value: str) -> str:
        scheme = urlsplit(value).scheme
        if scheme not in ("postgres", "postgresql", "sqlite"):
            raise ValueError("url must start with postgresql://, postgres:// or sqlite:///")
        if scheme == "sqlite" and not value.startswith("sqlite:////"):
            raise ValueError("a sqlite url needs an absolute path: sqlite:////abs/path.db")
        return value

    @property
    def engine(self) -> Literal["postgresql", "sqlite"]:
        return "sqlite" if self.url.startswith("sqlite:") else "postgresql"

    @property
    def sqlite_path(self) -> str:
        return unquote(self.url[len("sqlite:///") :])

    @property
    def password(self) -> str | None:
        return None if self.engine == "sqlite" else urlsplit(self.url).password


class _DatabaseLimits(BaseModel):
    """The settings every database tool reads: its connections and limits."""

    connections: dict[str, DatabaseConnection] = Field(default_factory=dict)
    max_rows: int = Field(default=DEFAULT_MAX_ROWS, ge=1, le=100_000)
    statement_timeout_seconds: float = Field(default=DEFAULT_STATEMENT_TIMEOUT, gt=0, le=3600)
    connect_timeout_seconds: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0, le=120)
    max_query_chars: int = Field(default=DEFAULT_MAX_QUERY_CHARS, ge=1, le=1_000_000)
    max_cell_chars: int = Field(default=DEFAULT_MAX_CELL_CHARS, ge=16, le=1_000_000)
    # The statement runs in a child process of the worker (``database_confined``):
    # how far its memory may grow, and how long past the timeouts it may live.
    memory_limit_mb: int = Field(default=DEFAULT_MEMORY_LIMIT_MB, ge=32, le=65_536)
    max_value_bytes: int = Field(default=DEFAULT_MAX_VALUE_BYTES, ge=1024, le=1_000_000_000)
    max_result_bytes: int = Field(default=DEFAULT_MAX_RESULT_BYTES, ge=1024, le=1_000_000_000)
    process_grace_seconds: float = Field(default=DEFAULT_PROCESS_GRACE_SECONDS, gt=0, le=120)

    @field_validator("connections")
    @classmethod
    def _names(cls, value: dict[str, DatabaseConnection]) -> dict[str, DatabaseConnection]:
        for name in value:
            if not re.match(_NAME_PATTERN, name):
                raise ValueError(f"connection name {name!r} must match {_NAME_PATTERN}")
        return value


class _TableLimit(BaseModel):
    max_tables: int = Field(default=DEFAULT_MAX_TABLES, ge=1, le=10_000)


class DatabaseToolSettings(_DatabaseLimits, _TableLimit):
    """``tools.<database tool>``: the tool's connections and limits, as a call reads them.

    Other keys of the section (``enabled``, ``timeout_seconds``…) belong to every tool
    and are ignored here; every key is already checked when the registry loads
    (``SqlToolSettings``, ``SchemaInspectSettings``).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)


class SqlToolSettings(_DatabaseLimits, StrictModel):
    """``tools.sql_query`` / ``tools.db_mutate`` beyond the common switches (load check)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SchemaInspectSettings(_DatabaseLimits, _TableLimit, StrictModel):
    """``tools.schema_inspect`` beyond the common switches (load check)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def database_settings(settings: Mapping[str, Any]) -> DatabaseToolSettings:
    """The tool's settings, or a CONFIG_INVALID failure naming the bad field (fail closed)."""
    try:
        return DatabaseToolSettings.model_validate(dict(settings))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ToolFailedError(
            f"the database tool's config is invalid at {where}: {first['msg']}",
            code="CONFIG_INVALID",
        ) from None


def connection_for(
    settings: DatabaseToolSettings, name: str, agent_name: str
) -> DatabaseConnection:
    """The named connection when it exists and this agent may use it; else HOST_NOT_ALLOWED."""
    usable = sorted(
        key
        for key, found in settings.connections.items()
        if found.agents is None or agent_name in found.agents
    )
    if name not in usable:
        offer = ", ".join(usable) if usable else "none are configured for you"
        raise ToolRefusedError(
            RefusalCode.HOST_NOT_ALLOWED,
            f"no database connection named {name!r} is available to you; usable: {offer}",
        )
    return settings.connections[name]


def connection_passwords(sections: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Passwords of every configured connection, readable or not (for redaction)."""
    found: list[str] = []
    for section in sections.values():
        connections = section.get("connections") or {}
        if not isinstance(connections, Mapping):
            continue
        for entry in connections.values():
            url = entry.get("url") if isinstance(entry, Mapping) else None
            if not isinstance(url, str):
                continue
            try:
                password = urlsplit(url).password
            except ValueError:
                continue
            if password:
                found.extend({password, unquote(password)})
    return found

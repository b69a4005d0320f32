"""``mcp_servers``: the upstream MCP servers the console governs (API.md "Upstream MCP servers").

Each entry says how to reach the server (stdio argv run in an isolating sandbox, or a
Streamable HTTP URL reached through the SSRF guard), what it may reach (``network``),
which named secrets it receives (``secrets``), which of its tools agents get
(``tools.allow`` / ``tools.deny`` globs) and how those tools are classified
(``tools.action_types`` / ``tools.safety_classes``, else the tool's annotations, else
the safe side). Every field is checked at load, so a typo names the field.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Final, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from common.config.binds import check_binds
from common.config.sandbox import ByteSize
from common.strict import StrictModel
from common.vocabulary.levels import context_action_types
from common.vocabulary.network import (
    Endpoint,
    NetworkTargetError,
    is_local_or_private,
    parse_host_port,
    parse_url,
)

# The least memory_limit a server may be given: an interpreter alone needs about this.
MIN_SERVER_MEMORY: Final = 32 * 1024**2
SERVER_NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
# A variable the stdio server reads, or a header the HTTP server receives.
ENV_NAME_RE: Final = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")
HEADER_NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9\-]{0,127}$")
# The name a secret is stored under (`${secret:NAME}`).
SECRET_NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
# Headers the transport itself sets: a secret never replaces them.
RESERVED_HEADERS: Final = frozenset(
    {"host", "content-length", "content-type", "accept", "mcp-session-id", "transfer-encoding"}
)
# A tool glob: the characters of tool names plus fnmatch's wildcards.
TOOL_GLOB_RE: Final = re.compile(r"^[A-Za-z0-9_.\-*?\[\]!/]{1,128}$")


def _check_globs(value: tuple[str, ...]) -> tuple[str, ...]:
    for glob in value:
        if not TOOL_GLOB_RE.match(glob):
            raise ValueError(
                f"{glob!r} is not a tool glob; use letters, digits, '_', '.', '-', '/' and "
                "the wildcards '*', '?', '[...]'"
            )
    return value


class McpToolRules(StrictModel):
    """``tools``: which upstream tools agents get, and how each is classified."""

    allow: tuple[str, ...] = ("*",)
    deny: tuple[str, ...] = ()
    action_types: dict[str, str] = Field(default_factory=dict)
    safety_classes: dict[str, Literal["read", "write", "network", "financial", "privileged"]] = (
        Field(default_factory=dict)
    )

    @field_validator("allow", "deny")
    @classmethod
    def _globs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_globs(value)

    @field_validator("action_types")
    @classmethod
    def _known_action_types(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        _check_globs(tuple(value))
        registry = context_action_types(info)
        for glob, action_type in value.items():
            try:
                registry.check_action_type(action_type)
            except ValueError as exc:
                raise ValueError(f"{glob}: {exc}") from exc
        return value

    @field_validator("safety_classes")
    @classmethod
    def _safety_globs(cls, value: dict[str, str]) -> dict[str, str]:
        _check_globs(tuple(value))
        return value

    def admits(self, tool: str) -> bool:
        """True when ``tool`` matches an allow glob and no deny glob (deny wins)."""
        if any(fnmatch.fnmatchcase(tool, glob) for glob in self.deny):
            return False
        return any(fnmatch.fnmatchcase(tool, glob) for glob in self.allow)

    def action_type_for(self, tool: str) -> str | None:
        """The configured action type of ``tool``: an exact key first, then the first glob."""
        return _lookup(self.action_types, tool)

    def safety_class_for(self, tool: str) -> str | None:
        """The configured safety class of ``tool``: an exact key first, then the first glob."""
        return _lookup(self.safety_classes, tool)


def _lookup(table: Mapping[str, str], tool: str) -> str | None:
    if tool in table:
        return table[tool]
    return next((v for glob, v in table.items() if fnmatch.fnmatchcase(tool, glob)), None)


class McpServer(StrictModel):
    """One MCP server the console imports tools from."""

    name: str
    transport: Literal["stdio", "http"]
    command: tuple[str, ...] | None = None
    url: str | None = None
    # stdio only: the isolating backend the server runs in (never the plain subprocess).
    sandbox: Literal["namespace", "docker"] | None = None
    # stdio only: the agent's workspace bound at /workspace, or an empty one.
    workspace: Literal["agent", "none"] = "none"
    # stdio only: one server process per worker, or one per agent (servers holding state).
    state: Literal["worker", "agent"] = "worker"
    # stdio: host:port the server may reach. http: the private addresses (IP:port, never a
    # name) the console may reach the server on; public ones need no entry.
    network: tuple[str, ...] = ()
    secrets: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    # stdio only: host paths bound read-only, at the same place, into this server's
    # sandbox alone (its code, its modules), never into agents' sandboxes.
    ro_binds: tuple[str, ...] = ()
    # stdio only: the memory the server and every process it starts may hold together;
    # null is the backend's own (sandboxing.namespace.server_memory_limit, or
    # sandboxing.docker.memory_limit).
    memory_limit: ByteSize | None = None
    tools: McpToolRules = McpToolRules()
    enabled: bool = True
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SERVER_NAME_RE.match(value) or "__" in value:
            raise ValueError("name must be 1-64 letters, digits, '_', '.', '-' without '__'")
        return value

    @field_validator("command")
    @classmethod
    def _argv(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and (not value or not value[0] or any("\x00" in w for w in value)):
            raise ValueError("command must be a non-empty list of words naming a program first")
        return value

    @field_validator("network")
    @classmethod
    def _host_ports(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            try:
                endpoint = parse_host_port(entry)
            except NetworkTargetError as exc:
                raise ValueError(f"{entry!r}: {exc}; write host:port") from exc
            if endpoint.port is None:
                raise ValueError(f"{entry!r} names no port; write host:port")
        return value

    @field_validator("memory_limit")
    @classmethod
    def _memory(cls, value: int | None) -> int | None:
        if value is not None and value < MIN_SERVER_MEMORY:
            raise ValueError(
                f"{value} bytes is too little for a server to start; give at least "
                f"{MIN_SERVER_MEMORY // 1024**2} MiB (e.g. 256m)"
            )
        return value

    @field_validator("ro_binds")
    @classmethod
    def _binds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return check_binds(value)

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not ENV_NAME_RE.match(key):
                raise ValueError(f"{key!r} is not a variable name (A-Z, 0-9, '_')")
        return value

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServer:
        if self.transport == "stdio":
            if not self.command or self.url is not None:
                raise ValueError("transport stdio needs command (a list) and no url")
        else:
            if self.url is None or self.command is not None:
                raise ValueError("transport http needs url and no command")
            try:
                parse_url(self.url, schemes=frozenset({"http", "https"}))
            except NetworkTargetError as exc:
                raise ValueError(f"url: {exc}") from exc
            self._check_http_network()
            stdio_only = {
                "sandbox",
                "env",
                "workspace",
                "state",
                "ro_binds",
                "memory_limit",
            } & self.model_fields_set
            if stdio_only:
                raise ValueError(
                    f"{', '.join(sorted(stdio_only))}: only for transport stdio (an http "
                    "server runs elsewhere)"
                )
        self._check_secrets()
        return self

    def _check_http_network(self) -> None:
        listed: set[tuple[str, int | None]] = set()
        for entry in self.network:
            endpoint = parse_host_port(entry)
            if not endpoint.is_ip:
                raise ValueError(
                    f"network: {entry!r}: an http server's network entries name the private "
                    "address it is reached on as IP:port (a name is never trusted to resolve "
                    "to a private address)"
                )
            listed.add((endpoint.host, endpoint.port))
        target = parse_url(str(self.url), schemes=frozenset({"http", "https"}))
        if (
            target.is_ip
            and is_local_or_private(target)
            and (target.host, target.port) not in listed
        ):
            where = Endpoint(target.host, target.port, True).display()
            raise ValueError(
                f"url: {where} is a private address, reached only when network names it: "
                f'add network: ["{where}"]'
            )

    def _check_secrets(self) -> None:
        for target, secret in self.secrets.items():
            if self.transport == "stdio" and not ENV_NAME_RE.match(target):
                raise ValueError(
                    f"secrets.{target}: a stdio server receives secrets as environment "
                    "variables; the key must be a variable name (A-Z, 0-9, '_')"
                )
            if self.transport == "http" and (
                not HEADER_NAME_RE.match(target) or target.lower() in RESERVED_HEADERS
            ):
                raise ValueError(
                    f"secrets.{target}: an http server receives secrets as headers; the key "
                    "must be a header name (letters, digits, '-') other than "
                    + ", ".join(sorted(RESERVED_HEADERS))
                )
            if target in self.env:
                raise ValueError(f"secrets.{target}: also set in env; name it once")
            if not SECRET_NAME_RE.match(secret):
                raise ValueError(
                    f"secrets.{target}: {secret!r} is not a secret name (letters, digits, "
                    "'_', '.', '-')"
                )

    @property
    def backend(self) -> str:
        """The sandbox backend a stdio server runs in (namespace unless configured)."""
        return self.sandbox or "namespace"

    @property
    def identity(self) -> str:
        """Who the server is, as audit rows name it: its command line or its URL."""
        if self.command is not None:
            return " ".join(self.command)
        return str(self.url)


def check_server_names(value: tuple[McpServer, ...]) -> tuple[McpServer, ...]:
    """Refuse two MCP servers with the same name."""
    names = [s.name.casefold() for s in value]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate MCP server names: {', '.join(duplicates)}")
    return value


__all__ = ["McpServer", "McpToolRules", "check_server_names"]

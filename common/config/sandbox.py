"""The ``sandboxing`` section of the config file, validated at load.

Frozen pydantic models with ``extra="forbid"``: a typo or an unknown backend
or category is an error naming the field and the allowed values. Our
defaults: file_system on subprocess (the console's own file runner, in a
private root, see ``private_root``); every other category on namespace.
``overrides`` in the file are merged over these defaults, so naming one
category never silently moves the others to a weaker backend. Only
file_system may use the subprocess backend: the other categories start
external programs (git runs programs a repository can name; shells,
interpreters, servers), which run only on namespace or docker.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from common.config.binds import check_binds
from common.vocabulary.categories import ALL_CATEGORIES
from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER, SANDBOX_GUI_IMAGE, SANDBOX_IMAGE

BackendName = Literal["subprocess", "namespace", "docker"]
BACKEND_NAMES: tuple[str, ...] = ("subprocess", "namespace", "docker")
ISOLATING_BACKENDS: tuple[str, ...] = ("namespace", "docker")
# The one category the subprocess backend may serve: its command is the
# console's own file runner, never an external program.
SUBPROCESS_CATEGORIES: frozenset[str] = frozenset({"file_system"})
CATEGORY_ALIASES = MappingProxyType({"git": "version_control"})
DEFAULT_OVERRIDES: MappingProxyType[str, str] = MappingProxyType(
    {
        "file_system": "subprocess",
        "version_control": "namespace",
        "terminal": "namespace",
        "code_execution": "namespace",
        "web": "namespace",
        "database": "namespace",
    }
)
DEFAULT_WORKSPACE_QUOTA = 1024**3
DEFAULT_WORKSPACE_QUOTA_ENTRIES = 100_000
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(value: object) -> int:
    """``"512m"``, ``"1Gi"``, ``"64MB"`` or an int -> bytes (binary units)."""
    if isinstance(value, bool):
        raise ValueError("a size must be a number of bytes or like '512m'")
    if isinstance(value, int):
        size = value
    else:
        match = _SIZE.match(str(value))
        if not match:
            raise ValueError(
                f"{value!r} is not a size; use bytes or a suffix k, m, g (e.g. '512m')"
            )
        size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size <= 0:
        raise ValueError("a size must be greater than zero")
    return size


ByteSize = Annotated[int, BeforeValidator(parse_size)]
Seconds = Annotated[float, Field(gt=0, le=86400)]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SubprocessConfig(_Section):
    """``sandboxing.subprocess``."""

    timeout_seconds: Seconds = 30.0
    # Always on: commands run inside the workspace; false is refused.
    workspace_only: Literal[True] = True
    restricted_path: bool = True
    extra_safe_path_prefixes: tuple[str, ...] = ()
    run_as_user: str = DEFAULT_SANDBOX_USER
    kill_grace_seconds: Seconds = 0.5
    use_cgroup: bool = True
    # Serve ``python3 -I -S -c`` commands from an already started interpreter.
    warm_python: bool = True
    # Read-only file operations are answered by a runner kept standing per agent and
    # workspace (at most this many per worker process; 0: a process per call).
    standing_runners: Annotated[int, Field(ge=0, le=4096)] = 32
    standing_idle_seconds: Annotated[float, Field(gt=0, le=3600)] = 30.0

    @field_validator("extra_safe_path_prefixes")
    @classmethod
    def _absolute(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for prefix in value:
            if not prefix.startswith("/") or prefix.rstrip("/") == "":
                raise ValueError(f"{prefix!r} must be an absolute directory other than /")
        return value


class NamespaceConfig(_Section):
    """``sandboxing.namespace`` (bubblewrap)."""

    timeout_seconds: Seconds = 60.0
    run_as_user: str = DEFAULT_SANDBOX_USER
    bwrap_path: str | None = None
    extra_safe_path_prefixes: tuple[str, ...] = ()
    # Bound read-only into every namespace sandbox (agents' commands included); a stdio
    # MCP server's own code goes in its entry's ``ro_binds`` instead.
    extra_ro_binds: tuple[str, ...] = ()
    tmpfs_size: ByteSize = 64 * 1024**2
    kill_grace_seconds: Seconds = 0.5
    use_cgroup: bool = True
    # What a stdio MCP server and its children may hold together, unless its entry says
    # (mcp_servers[].memory_limit): its control group's ceiling, and each process's
    # writable memory (RLIMIT_DATA) where there is no group.
    server_memory_limit: ByteSize = 1024**3

    @field_validator("extra_ro_binds")
    @classmethod
    def _binds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return check_binds(value)


class LifecycleConfig(_Section):
    """``sandboxing.docker.lifecycle``."""

    strategy: Literal["per-agent", "per-task", "per-call"] = "per-agent"
    grace_period_seconds: Annotated[float, Field(ge=0, le=86400)] = 30.0


class DockerConfig(_Section):
    """``sandboxing.docker``."""

    image: str = SANDBOX_IMAGE
    # The browser and desktop categories' image (Chromium, Xvfb and their kin).
    gui_image: str = SANDBOX_GUI_IMAGE
    network: Literal["none", "bridge"] = "none"
    network_overrides: dict[str, Literal["none", "bridge"]] = Field(default_factory=dict)
    allowed_hosts: tuple[str, ...] = ()
    dns_allowed: bool = True
    loopback_allowed: bool = True
    memory_limit: ByteSize = 512 * 1024**2
    cpu_limit: Annotated[float, Field(gt=0, le=256)] = 1.0
    pids_limit: Annotated[int, Field(gt=0, le=65536)] = 128
    tmpfs_size: ByteSize = 64 * 1024**2
    mount_mode: Literal["ro", "rw"] = "ro"
    timeout_seconds: Seconds = 120.0
    auto_remove: bool = True
    lifecycle: LifecycleConfig = LifecycleConfig()
    ship_raw_logs: bool = False
    max_log_bytes: ByteSize = 65536
    docker_host: str | None = None

    @field_validator("cpu_limit", mode="before")
    @classmethod
    def _cpu_text(cls, value: Any) -> Any:
        return float(value) if isinstance(value, str) else value

    @field_validator("network_overrides")
    @classmethod
    def _known_categories(cls, value: dict[str, str]) -> dict[str, str]:
        return {_category(name): policy for name, policy in value.items()}

    @field_validator("allowed_hosts")
    @classmethod
    def _no_allowlist(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if value:
            raise ValueError(
                "host allowlists need the egress proxy sidecar, which this console does not "
                "ship; use network 'none' or 'bridge'"
            )
        return value


def _category(name: str) -> str:
    canonical = CATEGORY_ALIASES.get(name, name)
    if canonical not in ALL_CATEGORIES:
        allowed = ", ".join(sorted({*ALL_CATEGORIES, *CATEGORY_ALIASES}))
        raise ValueError(f"unknown tool category {name!r}; allowed: {allowed}")
    return canonical


class SandboxingConfig(_Section):
    """The whole ``sandboxing`` section."""

    # Categories not named in ``overrides`` (mcp, memory, ...) get this one.
    default_backend: Literal["namespace", "docker"] = "namespace"
    overrides: dict[str, BackendName] = Field(
        default_factory=lambda: cast(dict[str, BackendName], dict(DEFAULT_OVERRIDES))
    )
    subprocess: SubprocessConfig = SubprocessConfig()
    namespace: NamespaceConfig = NamespaceConfig()
    docker: DockerConfig = DockerConfig()
    # Bytes one agent's workspace may hold; every writing call is held to it
    # (tools_app.quota). null switches the quota off.
    workspace_quota: ByteSize | None = DEFAULT_WORKSPACE_QUOTA
    # Entries (files, directories, links...) one agent's workspace may hold, whatever
    # their size; held like the byte quota. null switches it off.
    workspace_quota_entries: Annotated[int, Field(gt=0)] | None = DEFAULT_WORKSPACE_QUOTA_ENTRIES
    # How long a writing call waits for another one in the same workspace to end.
    workspace_lock_wait_seconds: Seconds = 120.0

    @field_validator("overrides", mode="before")
    @classmethod
    def _merge_defaults(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        merged = dict(DEFAULT_OVERRIDES)
        for name, backend in value.items():
            if backend not in BACKEND_NAMES:
                raise ValueError(
                    f"unknown sandbox backend {backend!r} for {name!r}; "
                    f"allowed: {', '.join(BACKEND_NAMES)}"
                )
            category = _category(str(name))
            if backend == "subprocess" and category not in SUBPROCESS_CATEGORIES:
                raise ValueError(
                    f"{name!r} cannot use the subprocess backend: its tools start external "
                    "programs, which run only in an isolating backend; allowed for "
                    f"{name!r}: {', '.join(ISOLATING_BACKENDS)} (subprocess serves only "
                    f"{', '.join(sorted(SUBPROCESS_CATEGORIES))})"
                )
            merged[category] = backend
        return merged

    def backend_for(self, category: str) -> str:
        """The backend name configured for ``category`` (unknown categories refused)."""
        return self.overrides.get(_category(category), self.default_backend)

    def referenced_backends(self) -> tuple[str, ...]:
        """Backends some category (or the default) uses, in a stable order."""
        used = {self.default_backend, *self.overrides.values()}
        return tuple(name for name in BACKEND_NAMES if name in used)

"""Access levels: sandboxed < restricted < standard < elevated, plus custom.

Each level fixes the seed's six sub-constraint dimensions (file-system scope,
code-execution isolation, network mode with a host:port allowlist, git access,
terminal access, deployment) plus the action types that need a human, and the
tool categories it permits. ``custom`` starts with nothing but discovery: a
custom agent gets exactly what its allowed list and overrides give it.

The seed's ``requires_approval: ["deployment", "database_write"]`` for
``restricted`` names no action types; it is written here as the action types it
means, ``deploy``, ``db:mutate`` and ``db:admin``, so it is checked like any
other action-type list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, Final

from pydantic import AfterValidator, ValidationInfo, field_validator

from common.strict import StrictModel
from common.vocabulary.action_types import DEFAULT_ACTION_TYPES, ActionTypeRegistry
from common.vocabulary.categories import ToolCategory
from common.vocabulary.messaging import recipient_grant, slack_channel
from common.vocabulary.network import NetworkTargetError, parse_host_rule

# A connection's name (common.config.connections), as a grant names it.
_CONNECTION_NAME: Final = re.compile(r"[a-z][a-z0-9_-]{0,62}")


class LevelName(StrEnum):
    """The five access levels."""

    SANDBOXED = "sandboxed"
    RESTRICTED = "restricted"
    STANDARD = "standard"
    ELEVATED = "elevated"
    CUSTOM = "custom"


# Rank of the ordered levels; custom is outside the order.
LEVEL_RANK: Final[MappingProxyType[str, int]] = MappingProxyType(
    {
        LevelName.SANDBOXED: 0,
        LevelName.RESTRICTED: 1,
        LevelName.STANDARD: 2,
        LevelName.ELEVATED: 3,
    }
)


class FileSystemScope(StrEnum):
    """Where path arguments may point."""

    NONE = "none"
    WORKSPACE_ONLY = "workspace_only"
    PROJECT_DIRECTORY = "project_directory"
    FULL = "full"


class CodeExecution(StrEnum):
    """The weakest sandbox isolation code-execution tools may run under."""

    NONE = "none"  # code execution is not permitted at all
    SUBPROCESS = "subprocess"
    NAMESPACE = "namespace"
    CONTAINERIZED = "containerized"


# Strength of each sandbox isolation a tool can run under.
ISOLATION_RANK: Final[MappingProxyType[str, int]] = MappingProxyType(
    {"subprocess": 1, "namespace": 2, "containerized": 3}
)


class NetworkMode(StrEnum):
    """How far network targets may reach."""

    NONE = "none"
    ALLOWLIST_ONLY = "allowlist_only"
    OPEN = "open"


class GitAccess(StrEnum):
    """Which version-control operations are allowed."""

    NONE = "none"
    LOCAL_ONLY = "local_only"
    READ_AND_BRANCH = "read_and_branch"
    FULL = "full"


# The vcs action types each git access mode permits; ``full`` permits all.
GIT_ACTIONS: Final[MappingProxyType[str, frozenset[str]]] = MappingProxyType(
    {
        GitAccess.NONE: frozenset(),
        GitAccess.LOCAL_ONLY: frozenset({"vcs:read", "vcs:commit", "vcs:branch"}),
        GitAccess.READ_AND_BRANCH: frozenset({"vcs:read", "vcs:branch", "vcs:clone"}),
    }
)


class TerminalAccess(StrEnum):
    """Whether terminal tools run, and with which commands."""

    NONE = "none"
    RESTRICTED_COMMANDS = "restricted_commands"
    FULL = "full"


DEFAULT_ALLOWED_COMMANDS: Final[tuple[str, ...]] = (
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "pwd",
    "echo",
    "git",
)


def context_action_types(info: ValidationInfo) -> ActionTypeRegistry:
    """The registry passed as ``action_types`` in the validation context, or the built-ins."""
    context = info.context or {}
    registry = context.get("action_types", DEFAULT_ACTION_TYPES)
    assert isinstance(registry, ActionTypeRegistry)
    return registry


def _known_pattern(value: str, info: ValidationInfo) -> str:
    return context_action_types(info).check_pattern(value)


ActionPattern = Annotated[str, AfterValidator(_known_pattern)]
"""A known action type or domain shortcut (``code`` for every ``code:*``)."""


class SubConstraintOverrides(StrictModel):
    """Per-agent (or per-config) changes to a level's sub-constraints; None keeps the level's."""

    file_system: FileSystemScope | None = None
    code_execution: CodeExecution | None = None
    network: NetworkMode | None = None
    allowed_hosts: tuple[str, ...] | None = None
    block_private_addresses: bool | None = None
    git: GitAccess | None = None
    terminal: TerminalAccess | None = None
    allowed_commands: tuple[str, ...] | None = None
    deployment: bool | None = None
    requires_approval: tuple[ActionPattern, ...] | None = None
    # External-data connections granted (``name`` or ``name:operation``).
    connections: tuple[str, ...] | None = None
    # send_email's recipients (an address, or a domain for anyone there) and
    # slack_post's channels; the communication section's own lists bound both.
    email_recipients: tuple[str, ...] | None = None
    slack_channels: tuple[str, ...] | None = None
    # The CI pipelines (deployment.ci) ci_trigger and ci_status may use, by name.
    ci_pipelines: tuple[str, ...] | None = None

    @field_validator("ci_pipelines")
    @classmethod
    def _pipeline_grants(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for entry in value or ():
            if not _CONNECTION_NAME.fullmatch(entry):
                raise ValueError(
                    f"pipeline grant {entry!r} must be a pipeline's name (lowercase letters, "
                    "digits, '_' and '-', starting with a letter)"
                )
        return value

    @field_validator("email_recipients")
    @classmethod
    def _recipient_grants(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(recipient_grant(entry) for entry in value)

    @field_validator("slack_channels")
    @classmethod
    def _channel_grants(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(slack_channel(entry) for entry in value)

    @field_validator("connections")
    @classmethod
    def _connection_grants(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for entry in value or ():
            name, _, operation = entry.partition(":")
            if not _CONNECTION_NAME.fullmatch(name) or (":" in entry and not operation.strip()):
                raise ValueError(
                    f"connection grant {entry!r} must be a connection name or name:operation"
                )
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _parsable_hosts(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None:
            for entry in value:
                try:
                    parse_host_rule(entry)
                except NetworkTargetError as exc:
                    raise ValueError(str(exc)) from exc
        return value

    @field_validator("allowed_commands")
    @classmethod
    def _bare_commands(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for command in value or ():
            if not command or "/" in command or any(ch.isspace() for ch in command):
                raise ValueError(f"command {command!r} must be a bare program name")
        return value


class AccessLevelOverride(SubConstraintOverrides):
    """A level as written in the config: any field left out keeps the seed default."""

    description: str | None = None
    categories: tuple[ToolCategory, ...] | None = None


class AccessLevelPolicy(StrictModel):
    """A fully specified access level."""

    name: LevelName
    description: str = ""
    categories: tuple[ToolCategory, ...] = (ToolCategory.DISCOVERY,)
    file_system: FileSystemScope = FileSystemScope.NONE
    code_execution: CodeExecution = CodeExecution.NONE
    network: NetworkMode = NetworkMode.NONE
    allowed_hosts: tuple[str, ...] = ()
    block_private_addresses: bool = True
    git: GitAccess = GitAccess.NONE
    terminal: TerminalAccess = TerminalAccess.NONE
    allowed_commands: tuple[str, ...] = DEFAULT_ALLOWED_COMMANDS
    deployment: bool = False
    requires_approval: tuple[str, ...] = ()
    connections: tuple[str, ...] = ()
    email_recipients: tuple[str, ...] = ()
    slack_channels: tuple[str, ...] = ()
    ci_pipelines: tuple[str, ...] = ()

    def merged(self, override: SubConstraintOverrides | None) -> AccessLevelPolicy:
        """This level with the non-None fields of ``override`` applied."""
        if override is None:
            return self
        changes: dict[str, Any] = {
            key: value for key, value in override.model_dump().items() if value is not None
        }
        return self.model_copy(update=changes) if changes else self


_C = ToolCategory
_SANDBOXED_CATEGORIES: Final = (
    _C.FILE_SYSTEM,
    _C.CODE_EXECUTION,
    _C.VERSION_CONTROL,
    _C.MEMORY,
    _C.DISCOVERY,
)
_RESTRICTED_CATEGORIES: Final = (
    *_SANDBOXED_CATEGORIES,
    _C.WEB,
    _C.DATABASE,
    _C.DESIGN,
    _C.ANALYTICS,
    _C.BROWSER,
    _C.EXTERNAL_DATA,
)
_STANDARD_CATEGORIES: Final = (
    *_RESTRICTED_CATEGORIES,
    _C.TERMINAL,
    _C.COMMUNICATION,
    _C.DESKTOP,
    _C.MCP,
)

DEFAULT_LEVELS: Final[MappingProxyType[str, AccessLevelPolicy]] = MappingProxyType(
    {
        LevelName.SANDBOXED: AccessLevelPolicy(
            name=LevelName.SANDBOXED,
            description="No external access. Isolated workspace.",
            categories=_SANDBOXED_CATEGORIES,
            file_system=FileSystemScope.WORKSPACE_ONLY,
            code_execution=CodeExecution.CONTAINERIZED,
            network=NetworkMode.NONE,
            git=GitAccess.LOCAL_ONLY,
        ),
        LevelName.RESTRICTED: AccessLevelPolicy(
            name=LevelName.RESTRICTED,
            description="Limited external access with approval.",
            categories=_RESTRICTED_CATEGORIES,
            file_system=FileSystemScope.PROJECT_DIRECTORY,
            code_execution=CodeExecution.CONTAINERIZED,
            network=NetworkMode.ALLOWLIST_ONLY,
            git=GitAccess.READ_AND_BRANCH,
            requires_approval=("deploy", "db:mutate", "db:admin"),
        ),
        LevelName.STANDARD: AccessLevelPolicy(
            name=LevelName.STANDARD,
            description="Normal development access.",
            categories=_STANDARD_CATEGORIES,
            file_system=FileSystemScope.PROJECT_DIRECTORY,
            code_execution=CodeExecution.CONTAINERIZED,
            network=NetworkMode.OPEN,
            git=GitAccess.FULL,
            terminal=TerminalAccess.RESTRICTED_COMMANDS,
        ),
        LevelName.ELEVATED: AccessLevelPolicy(
            name=LevelName.ELEVATED,
            description="Full access for senior/trusted agents.",
            categories=tuple(ToolCategory),
            file_system=FileSystemScope.FULL,
            code_execution=CodeExecution.CONTAINERIZED,
            network=NetworkMode.OPEN,
            git=GitAccess.FULL,
            terminal=TerminalAccess.FULL,
            deployment=True,
        ),
        LevelName.CUSTOM: AccessLevelPolicy(
            name=LevelName.CUSTOM,
            description="Per-agent custom configuration.",
        ),
    }
)


def resolve_levels(
    overrides: Mapping[LevelName, AccessLevelOverride]
    | Mapping[str, AccessLevelOverride]
    | None = None,
) -> MappingProxyType[str, AccessLevelPolicy]:
    """The five levels with config overrides applied over the seed defaults."""
    given: Mapping[Any, AccessLevelOverride] = overrides or {}
    return MappingProxyType(
        {name: default.merged(given.get(name)) for name, default in DEFAULT_LEVELS.items()}
    )

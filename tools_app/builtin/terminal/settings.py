"""The terminal tool's settings and the agent's terminal sub-constraint, read into rules.

Settings (``tools.shell_command``):
  ``allowed_commands``  list of program names or paths; absent means no allowlist
                        from settings (the agent's sub-constraint may still set one)
  ``denied_commands``   list of program names or paths (a family: ``python3`` covers
                        ``python``, ``python3.11``…)
  ``command_mode``      true to accept a ``command`` string (parsed and checked);
                        default false: argv only
  ``timeout_seconds``   default timeout (30); ``max_timeout_seconds`` the most a call
                        may ask for (300)
  ``max_output_bytes``  per stream (65536); output past it is cut and the command stopped
  ``max_command_length`` bytes of a command string or of all argv words (16384)
  ``search_path``       where programs are looked up, inside and out (the sandbox's PATH)
  ``read_only``         true mounts the workspace read-only
  ``max_link_scan_entries`` workspace entries checked for hard links before a run
                        (200 000); a larger workspace is refused, not trusted

Sub-constraints (``context.sub_constraints``):
  ``terminal``          ``none`` refuses every call; ``restricted_commands`` (the
                        default when unset) allows only ``allowed_commands``;
                        ``full`` leaves the settings' lists in force alone
  ``allowed_commands``  the agent's allowlist under ``restricted_commands``
                        (the level's defaults when unset)
  ``denied_commands``   extra denied programs for this agent
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StrictBool,
    StrictFloat,
    StrictStr,
    field_validator,
)

from common.strict import StrictModel
from common.vocabulary.levels import DEFAULT_ALLOWED_COMMANDS
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.terminal.shell.families import program_family
from tools_app.builtin.terminal.shell.policy import DEFAULT_SEARCH_PATH, ProgramRules

DEFAULT_TIMEOUT_SECONDS: Final = 30.0
DEFAULT_MAX_TIMEOUT_SECONDS: Final = 300.0
DEFAULT_MAX_OUTPUT_BYTES: Final = 64 * 1024
DEFAULT_MAX_COMMAND_LENGTH: Final = 16 * 1024
DEFAULT_MAX_LINK_SCAN_ENTRIES: Final = 200_000


def _program(value: str) -> str:
    if not value.strip():
        raise ValueError("a program name must not be empty")
    return value


def _split_path(value: object) -> object:
    return tuple(p for p in value.split(":") if p) if isinstance(value, str) else value


ProgramName = Annotated[StrictStr, AfterValidator(_program)]
HostList = tuple[StrictStr, ...] | None


class ShellCommandSettings(StrictModel):
    """``tools.shell_command``: the terminal's own settings, checked when the config loads.

    The common switches (``timeout_seconds``, ``max_output_bytes``…) are ``ToolSettings``.
    Numbers are any positive number, as ``TerminalSettings.from_mapping`` reads them.
    """

    allowed_commands: tuple[ProgramName, ...] | None = None
    denied_commands: tuple[ProgramName, ...] = ()
    command_mode: StrictBool = False
    max_timeout_seconds: StrictFloat = Field(default=DEFAULT_MAX_TIMEOUT_SECONDS, gt=0)
    max_command_length: StrictFloat = Field(default=DEFAULT_MAX_COMMAND_LENGTH, gt=0)
    # A ``:``-separated string or a list, as ``from_mapping`` reads it.
    search_path: Annotated[tuple[StrictStr, ...], BeforeValidator(_split_path)] = (
        DEFAULT_SEARCH_PATH
    )
    read_only: StrictBool = False
    max_link_scan_entries: StrictFloat = Field(default=DEFAULT_MAX_LINK_SCAN_ENTRIES, gt=0)
    allowed_hosts: HostList = None
    denied_hosts: HostList = None

    @field_validator("search_path")
    @classmethod
    def _absolute(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not all(p.startswith("/") for p in value):
            raise ValueError("every search_path entry must be an absolute path (start with /)")
        return value


def _bad(key: str, value: object, where: str = "setting") -> ToolFailedError:
    return ToolFailedError(
        f"terminal {where} {key!r} has the unusable value {value!r}; ask an admin to fix it",
        code="CONFIG_INVALID",
    )


def _families(value: object, key: str, where: str = "setting") -> frozenset[str]:
    if not isinstance(value, list | tuple) or not all(
        isinstance(v, str) and v.strip() for v in value
    ):
        raise _bad(key, value, where)
    return frozenset(program_family(v.strip()) for v in value)


def _number(settings: Mapping[str, Any], key: str, default: float) -> float:
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise _bad(key, value)
    return float(value)


def _flag(settings: Mapping[str, Any], key: str) -> bool:
    value = settings.get(key, False)
    if not isinstance(value, bool):
        raise _bad(key, value)
    return value


@dataclass(frozen=True, slots=True)
class TerminalSettings:
    """Limits and switches for ``shell_command``."""

    allowed: frozenset[str] | None
    denied: frozenset[str]
    command_mode: bool
    timeout_seconds: float
    max_timeout_seconds: float
    max_output_bytes: int
    max_command_length: int
    search_path: tuple[str, ...]
    read_only: bool
    max_link_scan_entries: int = DEFAULT_MAX_LINK_SCAN_ENTRIES

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> TerminalSettings:
        """Read and check the settings; a wrong type fails the call, never loosens it."""
        allowed = settings.get("allowed_commands")
        search = settings.get("search_path", DEFAULT_SEARCH_PATH)
        if isinstance(search, str):
            search = tuple(p for p in search.split(":") if p)
        if not isinstance(search, list | tuple) or not all(
            isinstance(p, str) and p.startswith("/") for p in search
        ):
            raise _bad("search_path", search)
        return cls(
            allowed=None if allowed is None else _families(allowed, "allowed_commands"),
            denied=_families(settings.get("denied_commands", ()), "denied_commands"),
            command_mode=_flag(settings, "command_mode"),
            timeout_seconds=_number(settings, "timeout_seconds", DEFAULT_TIMEOUT_SECONDS),
            max_timeout_seconds=_number(
                settings, "max_timeout_seconds", DEFAULT_MAX_TIMEOUT_SECONDS
            ),
            max_output_bytes=int(_number(settings, "max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES)),
            max_command_length=int(
                _number(settings, "max_command_length", DEFAULT_MAX_COMMAND_LENGTH)
            ),
            search_path=tuple(search),
            read_only=_flag(settings, "read_only"),
            max_link_scan_entries=int(
                _number(settings, "max_link_scan_entries", DEFAULT_MAX_LINK_SCAN_ENTRIES)
            ),
        )


def program_rules(settings: TerminalSettings, sub_constraints: Mapping[str, Any]) -> ProgramRules:
    """Combine the settings' lists with the agent's terminal sub-constraint."""
    access = sub_constraints.get("terminal", "restricted_commands")
    access = str(getattr(access, "value", access))
    if access == "none":
        raise ToolRefusedError(
            RefusalCode.BINARY_NOT_ALLOWED,
            "terminal access is not permitted for this agent (terminal: none)",
        )
    if access not in ("restricted_commands", "full"):
        raise _bad("terminal", access, "sub-constraint")
    allowed = settings.allowed
    if access == "restricted_commands":
        agent_allowed = _families(
            sub_constraints.get("allowed_commands", DEFAULT_ALLOWED_COMMANDS),
            "allowed_commands",
            "sub-constraint",
        )
        allowed = agent_allowed if allowed is None else allowed & agent_allowed
    denied = settings.denied | _families(
        sub_constraints.get("denied_commands", ()), "denied_commands", "sub-constraint"
    )
    return ProgramRules(allowed=allowed, denied=denied, search_path=settings.search_path)

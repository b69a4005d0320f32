"""The effective level: the stricter of the configured level and the earned one.

An admin's configured level (with the agent's sub-constraint overrides) is a
ceiling; trust earned through a strategy can only lower it. ``stricter``
combines two fully specified levels dimension by dimension, so neither can
grant what the other withholds: the categories both permit, the narrower
file-system scope, the stronger code isolation, the tighter network mode
(with the hosts both allow), the smaller terminal access, deployment only
when both permit it, and every action type either sends to a human. Git modes
are compared by the operations they permit; when neither contains the other
(``local_only`` and ``read_and_branch``) the ceiling's applies, so trust never
grants beyond what an admin configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Final, TypeVar

from common.vocabulary.action_types import BUILTIN_ACTION_TYPES
from common.vocabulary.levels import (
    GIT_ACTIONS,
    AccessLevelPolicy,
    CodeExecution,
    FileSystemScope,
    GitAccess,
    NetworkMode,
    TerminalAccess,
)

_E = TypeVar("_E", bound=StrEnum)

# Each dimension's values from the most to the least permissive.
_FILE_SYSTEM: Final = (
    FileSystemScope.FULL,
    FileSystemScope.PROJECT_DIRECTORY,
    FileSystemScope.WORKSPACE_ONLY,
    FileSystemScope.NONE,
)
# A weaker sandbox is the more permissive requirement; none permits no code at all.
_CODE_EXECUTION: Final = (
    CodeExecution.SUBPROCESS,
    CodeExecution.NAMESPACE,
    CodeExecution.CONTAINERIZED,
    CodeExecution.NONE,
)
_NETWORK: Final = (NetworkMode.OPEN, NetworkMode.ALLOWLIST_ONLY, NetworkMode.NONE)
_TERMINAL: Final = (TerminalAccess.FULL, TerminalAccess.RESTRICTED_COMMANDS, TerminalAccess.NONE)


def _tighter(order: Sequence[_E], a: _E, b: _E) -> _E:
    return a if order.index(a) >= order.index(b) else b


def _git_actions(mode: GitAccess) -> frozenset[str]:
    if mode is GitAccess.FULL:
        return frozenset(a for a in BUILTIN_ACTION_TYPES if a.startswith("vcs:")) | {"vcs:*"}
    return GIT_ACTIONS[mode]


def _tighter_git(earned: GitAccess, ceiling: GitAccess) -> GitAccess:
    """The mode permitting less; when neither contains the other, the ceiling's."""
    if _git_actions(earned) <= _git_actions(ceiling):
        return earned
    return ceiling


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    kept = set(b)
    return tuple(x for x in a if x in kept)


def _hosts(a: AccessLevelPolicy, b: AccessLevelPolicy, mode: NetworkMode) -> tuple[str, ...]:
    if mode is not NetworkMode.ALLOWLIST_ONLY:
        return ()
    lists = [p.allowed_hosts for p in (a, b) if p.network is NetworkMode.ALLOWLIST_ONLY]
    return _common(lists[0], lists[1]) if len(lists) == 2 else lists[0]


def _commands(a: AccessLevelPolicy, b: AccessLevelPolicy, mode: TerminalAccess) -> tuple[str, ...]:
    lists = [p.allowed_commands for p in (a, b) if p.terminal is TerminalAccess.RESTRICTED_COMMANDS]
    if mode is not TerminalAccess.RESTRICTED_COMMANDS or not lists:
        return a.allowed_commands
    return _common(lists[0], lists[1]) if len(lists) == 2 else lists[0]


def stricter(earned: AccessLevelPolicy, ceiling: AccessLevelPolicy) -> AccessLevelPolicy:
    """``earned`` bounded by ``ceiling`` in every dimension; named after ``earned``."""
    network = _tighter(_NETWORK, earned.network, ceiling.network)
    terminal = _tighter(_TERMINAL, earned.terminal, ceiling.terminal)
    approvals = tuple(dict.fromkeys((*ceiling.requires_approval, *earned.requires_approval)))
    return earned.model_copy(
        update={
            "categories": tuple(c for c in earned.categories if c in set(ceiling.categories)),
            "file_system": _tighter(_FILE_SYSTEM, earned.file_system, ceiling.file_system),
            "code_execution": _tighter(
                _CODE_EXECUTION, earned.code_execution, ceiling.code_execution
            ),
            "network": network,
            "allowed_hosts": _hosts(earned, ceiling, network),
            "block_private_addresses": earned.block_private_addresses
            or ceiling.block_private_addresses,
            "git": _tighter_git(earned.git, ceiling.git),
            "terminal": terminal,
            "allowed_commands": _commands(earned, ceiling, terminal),
            "deployment": earned.deployment and ceiling.deployment,
            "requires_approval": approvals,
            # Connections are granted to the agent, not earned: the ceiling's grant holds
            # (a category earned below it loses the tool with its category anyway).
            "connections": ceiling.connections,
            "email_recipients": ceiling.email_recipients,
            "slack_channels": ceiling.slack_channels,
            "ci_pipelines": ceiling.ci_pipelines,
        }
    )

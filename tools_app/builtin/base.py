"""PURE: the shape every built-in tool has, and how it refuses.

A built-in tool is a `ToolContract` (what it is) plus `run(context, arguments)` (what
it does). The worker resolves the sandbox backend for the tool's category, builds a
`ToolContext`, validates the arguments against the input schema, and calls `run`.
Tools never run anything outside `context.sandbox`; checks that can be done before
spending a process (paths, hosts, executables) happen in `run` first, and the
sandbox enforces them again.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tools_app.contracts import ToolContract
from tools_app.egress.gateway import EgressGateway
from tools_app.sandbox.protocol import Owner, SandboxBackend

if TYPE_CHECKING:  # the record API needs Django; this module is imported by pure ones
    from audit_app.record import AuditEntry


class RefusalCode(StrEnum):
    """Stable codes a tool refuses with; agents can branch on them."""

    PATH_NOT_REACHABLE = "PATH_NOT_REACHABLE"
    HOST_NOT_ALLOWED = "HOST_NOT_ALLOWED"
    BINARY_NOT_ALLOWED = "BINARY_NOT_ALLOWED"
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"


class ToolRefusedError(Exception):
    """The tool will not do this call; `reason` says why in words an agent can act on."""

    def __init__(self, code: RefusalCode, reason: str) -> None:
        super().__init__(f"{code.value}: {reason}")
        self.code = code
        self.reason = reason


# The code of a ToolFailedError for work stopped because its call was cancelled while it
# ran: the call ends `cancelled`, with what the tool said kept as its result.
CANCELLED_CODE = "cancelled"


class ToolFailedError(Exception):
    """The tool tried and the work failed (the command exited non-zero, the host said 500…)."""

    def __init__(self, message: str, *, code: str = "TOOL_FAILED", timed_out: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        # True when the work was stopped at its time limit: the call ends `timed_out`.
        self.timed_out = timed_out


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Everything a tool may use for one call.

    `settings` is the tool's section of the YAML config (`tools.<name>`), already
    validated; `sub_constraints` the agent's effective sub-constraints as plain data
    (file-system scope, network mode and allowlist, terminal access, git access).
    """

    agent_id: str
    agent_name: str
    workspace: Path
    sandbox: SandboxBackend
    owner: Owner
    task_id: str | None = None
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    sub_constraints: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    egress: EgressGateway | None = None
    """The worker's egress proxy; None where no proxy runs (the sandbox gets no network)."""
    # The invocation this call runs for (a tool that waits may look whether it was cancelled).
    invocation_id: str | None = None
    audit_entries: list[AuditEntry] = field(default_factory=list)
    """Audit rows the tool leaves for its call's record (``audit_record``'s arguments,
    the agent left out): the worker appends them in the transaction that settles the
    call, before ``invocation.finished``, however the call ends."""

    @property
    def invocation_uuid(self) -> uuid.UUID | None:
        """``invocation_id`` as the record keeps it (audit rows of the tool's own)."""
        return uuid.UUID(self.invocation_id) if self.invocation_id else None


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool returns. `content` is raw text: the pipeline sanitises it for the agent."""

    content: str
    structured: Mapping[str, Any] | None = None
    is_error: bool = False
    error_code: str | None = None
    exit_code: int | None = None
    truncated: bool = False
    duration_ms: int | None = None
    # True when the sandbox ended the call at its time limit: the call is `timed_out`.
    timed_out: bool = False


@runtime_checkable
class BuiltinTool(Protocol):
    """A built-in tool: its contract and how to run it."""

    contract: ToolContract

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Do the call, or raise ToolRefusedError / ToolFailedError with the reason."""
        ...

"""Tools that exist only for the pipeline's tests: each does one observable thing.

Registered through SYNTHORG_EXTRA_TOOL_MODULES, in the test process and in the
worker processes the tests start, so both sides see the same contracts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tools_app.builtin.base import ToolContext, ToolOutcome
from tools_app.contracts import ToolContract
from tools_app.sandbox.protocol import MountMode, SandboxSpec, WorkspaceMount

_TEXT_OUT = {"type": "object", "properties": {"exit_code": {"type": "integer"}}}


def _contract(name: str, **extra: Any) -> ToolContract:
    fields: dict[str, Any] = {
        "name": name,
        "category": "file_system",
        "action_type": "code:read",
        "safety_class": "read",
        "summary": f"test tool {name}",
        "description": f"A tool for the console's own tests: {name}.",
        "input_schema": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "maxLength": 10000},
                "seconds": {"type": "number", "minimum": 0, "maximum": 60},
            },
            "additionalProperties": False,
        },
        "output_schema": _TEXT_OUT,
    }
    fields.update(extra)
    return ToolContract.model_validate(fields)


def _run(
    context: ToolContext, argv: tuple[str, ...], *, writable: bool = False, timeout: float = 30
) -> ToolOutcome:
    result = context.sandbox.run(
        SandboxSpec(
            argv=argv,
            workspace=WorkspaceMount(
                context.workspace, MountMode.READ_WRITE if writable else MountMode.READ_ONLY
            ),
            timeout_seconds=timeout,
            owner=context.owner,
        )
    )
    return ToolOutcome(
        content=result.stdout + result.stderr,
        structured={"exit_code": result.exit_code if result.exit_code is not None else -1},
        is_error=not result.ok,
        exit_code=result.exit_code,
        truncated=result.truncated,
        duration_ms=result.duration_ms,
        timed_out=result.timed_out,
    )


@dataclass(frozen=True)
class Echo:
    """Prints its text through /bin/echo in the sandbox."""

    contract: ToolContract = field(default_factory=lambda: _contract("test_echo"))

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        return _run(context, ("echo", str(arguments.get("text", ""))))


@dataclass(frozen=True)
class Counter:
    """Appends a line to counter.txt in the workspace (``run`` and the call's ``text``),
    then sleeps: one line per run."""

    contract: ToolContract = field(
        default_factory=lambda: _contract(
            "test_counter", action_type="code:write", safety_class="write"
        )
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        seconds = float(arguments.get("seconds", 0))
        # ``text`` names the run on its line (letters, digits and dashes only).
        marker = str(arguments.get("text", ""))
        if not re.fullmatch(r"[A-Za-z0-9-]{0,64}", marker):
            return ToolOutcome(content="text must be letters, digits and dashes", is_error=True)
        script = f"echo run {marker} >> counter.txt; sleep {seconds:g}; echo done"
        return _run(context, ("sh", "-c", script), writable=True, timeout=seconds + 30)


@dataclass(frozen=True)
class IdempotentCounter(Counter):
    contract: ToolContract = field(
        default_factory=lambda: _contract(
            "test_counter_idempotent",
            action_type="code:write",
            safety_class="write",
            idempotent=True,
        )
    )


@dataclass(frozen=True)
class BadOutput:
    """Returns structured output that breaks its own output schema."""

    contract: ToolContract = field(default_factory=lambda: _contract("test_bad_output"))

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        return ToolOutcome(content="ok", structured={"exit_code": "not a number"})


@dataclass(frozen=True)
class Sleeper:
    """Sleeps in the sandbox with a short time limit."""

    contract: ToolContract = field(default_factory=lambda: _contract("test_sleep"))

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        return _run(context, ("sleep", "30"), timeout=float(arguments.get("seconds", 1)))


@dataclass(frozen=True)
class Privileged:
    """Needs two people's approval by its safety class."""

    contract: ToolContract = field(
        default_factory=lambda: _contract(
            "test_privileged", safety_class="privileged", action_type="code:write"
        )
    )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        return _run(context, ("echo", "privileged"))


@dataclass(frozen=True)
class Gate:
    """Waits in the sandbox until a file ``gate.open`` appears in its workspace (or its
    time runs out), then says so: calls that run for as long as a test wants."""

    contract: ToolContract = field(default_factory=lambda: _contract("test_gate"))

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        script = "while [ ! -e gate.open ]; do sleep 1; done; echo passed"
        return _run(context, ("sh", "-c", script), timeout=float(arguments.get("seconds", 60)))


TOOLS = (Echo(), Counter(), IdempotentCounter(), BadOutput(), Sleeper(), Privileged(), Gate())

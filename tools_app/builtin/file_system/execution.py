"""Run one file operation through the category's sandbox and read its answer.

The runner's source travels in argv (``python3 -I -S -c``), the request on
stdin, the answer on stdout, so the same call works on the subprocess,
namespace and docker backends without exposing a host path to the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tools_app.builtin.base import RefusalCode, ToolContext, ToolFailedError, ToolRefusedError
from tools_app.builtin.file_system.paths import (
    DEFAULT_MAX_PATH_BYTES,
    AgentPath,
    PathRules,
    check_agent_path,
    normalise_patterns,
    workspace_roots,
)
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import MIB, Limits, MountMode, SandboxSpec, WorkspaceMount

RUNNER_SOURCE: Final = (Path(__file__).parent / "inside" / "runner.py").read_text(encoding="utf-8")
RUNNER_ARGV: Final = ("python3", "-I", "-S", "-c", RUNNER_SOURCE)
_REFUSAL_CODES: Final = frozenset(code.value for code in RefusalCode)


@dataclass(frozen=True, slots=True)
class FileSystemSettings:
    """The file tools' settings (``tools.<name>`` in the config), with safe defaults.

    Keys: ``max_path_length`` (bytes, 4096), ``max_read_bytes`` (1 MiB),
    ``max_write_bytes`` (1 MiB, also the largest file ``edit_file`` touches),
    ``max_entries`` (1000), ``read_only`` (false), ``denied_paths`` (patterns added
    to the always-deny floor), ``timeout_seconds`` (30).
    """

    max_path_length: int = DEFAULT_MAX_PATH_BYTES
    max_read_bytes: int = MIB
    max_write_bytes: int = MIB
    max_entries: int = 1000
    read_only: bool = False
    denied_paths: tuple[str, ...] = ()
    timeout_seconds: float = 30.0

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> FileSystemSettings:
        """Read the known keys; a value of the wrong type is refused, never guessed."""
        values: dict[str, Any] = {}
        for key in ("max_path_length", "max_read_bytes", "max_write_bytes", "max_entries"):
            if key in settings:
                values[key] = _positive_int(settings[key], key)
        if "timeout_seconds" in settings:
            value = settings["timeout_seconds"]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise _bad_setting("timeout_seconds", value)
            values["timeout_seconds"] = float(value)
        if "read_only" in settings:
            if not isinstance(settings["read_only"], bool):
                raise _bad_setting("read_only", settings["read_only"])
            values["read_only"] = settings["read_only"]
        if "denied_paths" in settings:
            values["denied_paths"] = normalise_patterns(settings["denied_paths"] or ())
        return cls(**values)


def _bad_setting(key: str, value: object) -> ToolFailedError:
    return ToolFailedError(
        f"file tool setting {key!r} has the unusable value {value!r}; ask an admin to fix the "
        "tools configuration",
        code="CONFIG_INVALID",
    )


def _positive_int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _bad_setting(key, value)
    return value


def file_system_scope(context: ToolContext) -> str:
    """The agent's file-system scope from its sub-constraints (``workspace_only`` if unset)."""
    scope = context.sub_constraints.get("file_system", "workspace_only")
    return str(getattr(scope, "value", scope))


def resolve_path(context: ToolContext, settings: FileSystemSettings, raw: object) -> AgentPath:
    """Check a path argument for this agent; refuse before any process is spent."""
    scope = file_system_scope(context)
    if scope == "none":
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            "file-system access is not permitted for this agent (scope none)",
        )
    rules = PathRules(
        workspace_roots=workspace_roots(context.workspace),
        allow_absolute=scope == "full",
        max_path_bytes=settings.max_path_length,
        extra_denied=settings.denied_paths,
    )
    return check_agent_path(raw, rules)


def refuse_when_read_only(settings: FileSystemSettings, tool: str) -> None:
    """Read-only mode: every tool that changes files refuses."""
    if settings.read_only:
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            f"{tool} is refused: the file tools are in read-only mode (settings read_only: "
            "true); only reading is permitted",
        )


def run_operation(
    context: ToolContext,
    settings: FileSystemSettings,
    path: AgentPath,
    op: str,
    *,
    writes: bool,
    output_bytes: int = MIB,
    **fields: Any,
) -> tuple[dict[str, Any], int]:
    """Run ``op`` on ``path`` in the sandbox; return (result, duration_ms) or raise."""
    request = {
        "op": op,
        "anchor": path.anchor,
        "parts": list(path.parts),
        "floor": [*PathRules(workspace_roots=(), extra_denied=settings.denied_paths).floor],
        **fields,
    }
    stdin = json.dumps(request, ensure_ascii=True).encode("ascii")
    spec = SandboxSpec(
        argv=RUNNER_ARGV,
        workspace=WorkspaceMount(
            context.workspace, MountMode.READ_WRITE if writes else MountMode.READ_ONLY
        ),
        stdin=stdin,
        timeout_seconds=settings.timeout_seconds,
        limits=Limits(
            output_bytes=max(output_bytes, 64 * 1024),
            file_size_bytes=max(settings.max_write_bytes * 2, MIB),
        ),
        owner=context.owner,
        # One request line, one answer line: a standing runner may answer it.
        answers_lines=True,
    )
    try:
        result = context.sandbox.run(spec)
    except SandboxError as exc:
        raise ToolFailedError(exc.reason, code="SANDBOX_REFUSED") from exc
    if result.timed_out:
        raise ToolFailedError(
            f"the file operation did not finish within {settings.timeout_seconds:g} s",
            code="TIMED_OUT",
            timed_out=True,
        )
    try:
        answer = json.loads(result.stdout)
    except ValueError:
        detail = (result.stderr or result.stdout).strip()[-500:]
        raise ToolFailedError(
            f"the file operation failed in the sandbox (exit {result.exit_code}): {detail}",
            code="SANDBOX_FAILED",
        ) from None
    if not isinstance(answer, dict):
        raise ToolFailedError("the sandbox answered something unreadable", code="SANDBOX_FAILED")
    if answer.get("ok") is True and isinstance(answer.get("result"), dict):
        return answer["result"], result.duration_ms
    code = str(answer.get("code", "IO_ERROR"))
    reason = str(answer.get("reason", "the file operation failed"))
    if code in _REFUSAL_CODES:
        raise ToolRefusedError(RefusalCode(code), reason)
    raise ToolFailedError(reason, code=code)

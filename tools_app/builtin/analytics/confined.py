"""How chart_render and report_build touch the workspace and run their renderer.

Reading: a ``path`` argument is checked and read exactly as ``read_file`` does it
(``file_system.execution``: malformed, encoded and look-alike paths, ``..`` out of
the workspace and the always-deny floor refused in the worker; the sandboxed file
runner then walks it with ``O_NOFOLLOW`` and refuses symlinks, special files and
files with more than one hard link). Only paths inside the workspace are taken,
whatever the agent's file-system scope.

Rendering: the program (``inside/``) runs in the category's sandbox with no
network, the workspace mounted read-write for its output (held to the workspace
quota like any writing call), the data on stdin, and the section's time and memory
limits; its one-line answer is read here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolRefusedError,
)
from tools_app.builtin.file_system.execution import (
    FileSystemSettings,
    resolve_path,
    run_operation,
)
from tools_app.builtin.program_answer import program_answer
from tools_app.quota.precheck import sandbox_failure
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import (
    MIB,
    Limits,
    MountMode,
    SandboxSpec,
    WorkspaceMount,
)

INSIDE: Final = Path(__file__).parent / "inside"
# Growth of text once escaped in the file runner's JSON answer, and its envelope.
_JSON_GROWTH: Final = 6
_ENVELOPE_BYTES: Final = 64 * 1024
_REFUSALS: Final = frozenset(code.value for code in RefusalCode)


def program(name: str) -> str:
    """The source of an ``inside/`` program."""
    return (INSIDE / name).read_text(encoding="utf-8")


def read_workspace_text(context: ToolContext, raw: object, max_bytes: int) -> tuple[str, str]:
    """``(path as shown, text)`` of a UTF-8 file in the workspace, refused as read_file
    refuses, and when larger than ``max_bytes``."""
    settings = FileSystemSettings(max_read_bytes=max_bytes)
    path = resolve_path(context, settings, raw)
    if path.anchor != "workspace" or path.is_anchor:
        raise ToolRefusedError(
            RefusalCode.PATH_NOT_REACHABLE,
            f"path {path.display()!r} must name a file inside the workspace",
        )
    result, _ = run_operation(
        context,
        settings,
        path,
        "read",
        writes=False,
        output_bytes=max_bytes * _JSON_GROWTH + _ENVELOPE_BYTES,
        offset=0,
        length=max_bytes,
    )
    shown = path.display()
    if result.get("binary"):
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"{shown} is a binary file; give a text file"
        )
    if result.get("next_offset") is not None:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"{shown} is {result.get('size')} bytes; the limit is {max_bytes}",
        )
    return shown, str(result["content"])


def run_renderer(
    context: ToolContext,
    source: str,
    request: dict[str, Any],
    *,
    timeout_seconds: float,
    memory_bytes: int,
) -> dict[str, Any]:
    """Run an ``inside/`` program on ``request``; its answer, or the failure raised."""
    spec = SandboxSpec(
        argv=("python3", "-I", "-S", "-c", source),
        workspace=WorkspaceMount(context.workspace, MountMode.READ_WRITE),
        stdin=json.dumps(request, ensure_ascii=False).encode("utf-8"),
        timeout_seconds=timeout_seconds,
        limits=Limits(
            memory_bytes=memory_bytes,
            cpu_seconds=max(1, int(timeout_seconds) + 1),
            max_processes=64,
            output_bytes=64 * 1024,
            file_size_bytes=64 * MIB,
        ),
        owner=context.owner,
    )
    try:
        result = context.sandbox.run(spec)
    except SandboxError as exc:
        raise sandbox_failure(exc, code="SANDBOX_REFUSED") from exc
    return program_answer(
        result,
        what="rendering",
        timeout=timeout_seconds,
        failed_code="RENDER_FAILED",
        refusals=_REFUSALS,
    )

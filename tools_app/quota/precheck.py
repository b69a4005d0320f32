"""Refusing a file write before it starts when it would take the workspace past its quota.

The guard (``guard``) would stop it anyway; checking first gives the agent the
numbers and leaves nothing half-written. A replaced file counts in full: file
writes are atomic, so the new copy is written beside the old one before the old
one's bytes are freed, and the workspace must hold both for that moment.
"""

from __future__ import annotations

import os
from pathlib import Path

from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.quota.guard import QUOTA_SETTING, SandboxQuotaExceededError
from tools_app.quota.usage import human_size, workspace_usage
from tools_app.sandbox.errors import SandboxError


def refuse_write_over_quota(*, quota_bytes: int | None, workspace: Path, new_bytes: int) -> None:
    """Raise LIMIT_EXCEEDED when the workspace cannot hold ``new_bytes`` more."""
    if quota_bytes is None:
        return
    used = workspace_usage(Path(os.path.realpath(workspace))).total
    if used + new_bytes > quota_bytes:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"writing {human_size(new_bytes)} would take the workspace to "
            f"{human_size(used + new_bytes)}, over its quota of {human_size(quota_bytes)} "
            f"({QUOTA_SETTING}); it holds {human_size(used)} now. Delete files to make room",
        )


def sandbox_failure(exc: SandboxError, *, code: str) -> ToolRefusedError | ToolFailedError:
    """What a tool answers when its sandbox run was refused: a write past the workspace
    quota is LIMIT_EXCEEDED with the guard's numbers (as ``write_file`` answers it),
    anything else a failure with ``code``."""
    if isinstance(exc, SandboxQuotaExceededError):
        return ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, exc.reason)
    return ToolFailedError(exc.reason, code=code)

"""Refusing a file write before it starts when it would take the workspace past its quota.

The guard (``guard``) would stop it anyway; checking first gives the agent the
numbers and leaves nothing half-written. A replaced file counts in full: file
writes are atomic, so the new copy is written beside the old one before the old
one's bytes are freed, and the workspace must hold both for that moment.
"""

from __future__ import annotations

import os
from pathlib import Path

from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.quota.guard import QUOTA_SETTING
from tools_app.quota.usage import human_size, workspace_usage


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

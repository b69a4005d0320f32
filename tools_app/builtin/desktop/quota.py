"""The workspace quota around a desktop call.

A desktop session outlives its calls, so the quota guard around each sandbox run
(``tools_app.quota.guard``) never sees what its programs write. Each desktop call is
held to the quota the same way instead: it takes the workspace's writing turn, the
workspace is measured before and after, and what the call took over the quota (a
program saving a file, a screenshot) is undone and the call fails in the quota's
words. What the programs wrote between calls is found by the next call's first
measure: a workspace already over its quota refuses desktop calls until files are
deleted (the file tools still can), instead of letting the programs write more.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tools_app.builtin.base import RefusalCode, ToolContext, ToolRefusedError
from tools_app.quota.guard import (
    DEFAULT_LOCK_WAIT_SECONDS,
    ENTRIES_SETTING,
    QUOTA_SETTING,
    held_to_quota,
    workspace_turn,
)
from tools_app.quota.precheck import sandbox_failure
from tools_app.quota.usage import WorkspaceUsage, human_size
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.paths import resolve_workspace


def over_before(
    before: WorkspaceUsage, quota_bytes: int | None, quota_entries: int | None
) -> str | None:
    """PURE: why a desktop call may not start in a workspace measured at ``before``."""
    if quota_bytes is not None and before.total > quota_bytes:
        return (
            f"the workspace holds {human_size(before.total)}, over its quota of "
            f"{human_size(quota_bytes)} ({QUOTA_SETTING}): programs on the desktop wrote "
            "past it since the last call; delete files to make room"
        )
    if quota_entries is not None and before.entries > quota_entries:
        return (
            f"the workspace holds {before.entries} entries, over its limit of "
            f"{quota_entries} ({ENTRIES_SETTING}): programs on the desktop made them since "
            "the last call; delete files to make room"
        )
    return None


@contextmanager
def desktop_call_held(context: ToolContext) -> Iterator[None]:
    """Hold the call inside to the workspace quota the worker's backend carries."""
    # The worker's backend is wrapped by the guard when a limit is configured.
    quota_bytes: int | None = getattr(context.sandbox, "quota_bytes", None)
    quota_entries: int | None = getattr(context.sandbox, "quota_entries", None)
    if quota_bytes is None and quota_entries is None:
        yield
        return
    wait = float(getattr(context.sandbox, "lock_wait_seconds", DEFAULT_LOCK_WAIT_SECONDS))
    root = resolve_workspace(context.workspace)
    try:
        with (
            workspace_turn(root, wait),
            held_to_quota(root, quota_bytes=quota_bytes, quota_entries=quota_entries) as before,
        ):
            refusal = over_before(before, quota_bytes, quota_entries)
            if refusal is not None:
                raise ToolRefusedError(RefusalCode.LIMIT_EXCEEDED, refusal)
            yield
    except SandboxError as exc:
        # Over the quota: LIMIT_EXCEEDED, as a writing call answers it; a busy workspace
        # (another writing call held it too long) fails with the reason.
        raise sandbox_failure(exc, code="SANDBOX_REFUSED") from exc

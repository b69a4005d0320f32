"""The workspace quota around a sandbox backend: every writing call is held to it.

No stock Debian host offers a per-directory size limit without setup (project
quotas need a mount option, a loop image needs root and a mount per workspace),
so the quota is enforced around the call, on any backend and file system:

1. before: the workspace is measured (``usage``); what is left of the quota
   becomes the call's ``RLIMIT_FSIZE`` (when smaller than its own per-file
   limit), so no single file the call writes can grow past the quota, and
   ``yes > f`` or ``dd`` stop at it;
2. after (also when the call failed or was killed): the workspace is measured
   again, and if the call took it over the quota what it added is undone
   (``rollback``) and the call fails with the reason, naming what was removed.

The workspace's entries (files, directories, links...) are held to
``sandboxing.workspace_quota_entries`` the same way: counted before and after,
and a call that took the workspace over the limit has what it created removed
until it fits, and fails naming the limit. Either limit may be off (null).

Writing calls in one workspace take turns (an exclusive ``flock`` on the
workspace directory, waited for up to ``sandboxing.workspace_lock_wait_seconds``),
so two calls never share one remainder of the quota and one call's rollback never
removes what another is writing. The lock is per host: workers on other machines
sharing a workspace over the network are not serialised. A read-only call is not
measured or serialised. A workspace already over its quota (the quota was
lowered) still takes calls that free space: they get a one-byte file limit.
Between the two measurements a call that writes many files can hold more than
the quota for up to its timeout; the after-check takes it back.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from tools_app.quota.rollback import Undone, roll_back
from tools_app.quota.usage import WorkspaceUsage, human_size, workspace_usage
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.paths import resolve_workspace
from tools_app.sandbox.protocol import ProbeReport, SandboxBackend, SandboxResult, SandboxSpec

QUOTA_SETTING = "sandboxing.workspace_quota"
ENTRIES_SETTING = "sandboxing.workspace_quota_entries"
# How a program reports meeting RLIMIT_FSIZE: killed by SIGXFSZ (a shell reports it
# as 128 + the signal), or, when it ignores the signal, a write failing with EFBIG.
SHELL_SIGNAL_BASE = 128
FILE_LIMIT_MARKERS = ("File size limit exceeded", "File too large")


LOCK_SETTING = "sandboxing.workspace_lock_wait_seconds"
DEFAULT_LOCK_WAIT_SECONDS: Final = 120.0
# How often a writing call looks again whether the workspace's lock is free.
_LOCK_POLL_SECONDS: Final = 0.05


class SandboxQuotaExceededError(SandboxError):
    """The call wrote past the workspace quota; what it added was undone."""


class SandboxWorkspaceBusyError(SandboxError):
    """Another writing call held the workspace longer than this call may wait."""


@contextmanager
def workspace_turn(root: Path, wait_seconds: float) -> Iterator[None]:
    """Hold the workspace's writing turn (an exclusive flock on its directory)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SandboxWorkspaceBusyError(
                        f"another writing call in this workspace ran for more than "
                        f"{wait_seconds:g}s ({LOCK_SETTING}); nothing was run, try again"
                    ) from None
                time.sleep(_LOCK_POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # closing the descriptor ends the turn


def _undone_text(undone: Undone) -> str:
    parts: list[str] = []
    if undone.removed:
        names = ", ".join(undone.removed[:5]) + (" …" if len(undone.removed) > 5 else "")
        parts.append(f"removed {len(undone.removed)} file(s) it created ({names})")
    if undone.cut_back:
        names = ", ".join(undone.cut_back[:5]) + (" …" if len(undone.cut_back) > 5 else "")
        parts.append(f"cut {len(undone.cut_back)} grown file(s) back to their size ({names})")
    if undone.dirs_removed:
        parts.append(f"removed {undone.dirs_removed} empty director(ies) it created")
    return "; ".join(parts) or "nothing it wrote could be undone"


def _over_text(
    before: WorkspaceUsage,
    after: WorkspaceUsage,
    quota_bytes: int | None,
    quota_entries: int | None,
) -> str:
    """Which limit(s) the call went over, with the numbers."""
    over: list[str] = []
    if quota_bytes is not None and after.total > quota_bytes and after.total > before.total:
        over.append(
            f"the call took the workspace to {human_size(after.total)}, over its quota of "
            f"{human_size(quota_bytes)} ({QUOTA_SETTING}); "
            f"{human_size(max(0, quota_bytes - before.total))} were free before it"
        )
    if (
        quota_entries is not None
        and after.entries > quota_entries
        and after.entries > before.entries
    ):
        over.append(
            f"the call took the workspace to {after.entries} entries (files, directories, "
            f"links), over its limit of {quota_entries} entries ({ENTRIES_SETTING}); "
            f"{max(0, quota_entries - before.entries)} were free before it"
        )
    return "; and ".join(over)


def _hit_file_limit(result: SandboxResult) -> bool:
    if result.exit_code in (-signal.SIGXFSZ, SHELL_SIGNAL_BASE + signal.SIGXFSZ):
        return True
    return any(marker in result.stderr for marker in FILE_LIMIT_MARKERS)


def _explain_file_limit(result: SandboxResult, left: int, quota: int) -> SandboxResult:
    """Say, after what the program said, that the file-size limit it met is the quota."""
    if result.exit_code == 0 or not _hit_file_limit(result):
        return result
    note = (
        f"\nQUOTA_EXCEEDED: a file reached {human_size(left)}, what the workspace quota of "
        f"{human_size(quota)} ({QUOTA_SETTING}) had left; delete files to make room\n"
    )
    return dataclasses.replace(result, stderr=result.stderr + note)


@contextmanager
def held_to_quota(
    root: Path, *, quota_bytes: int | None, quota_entries: int | None
) -> Iterator[WorkspaceUsage]:
    """Measure ``root`` (yielded), let the caller write, measure again (also when it
    failed): what took the workspace over a limit is undone and raised as
    SandboxQuotaExceededError. The caller holds the workspace's turn."""
    before = workspace_usage(root)
    try:
        yield before
    finally:
        after = workspace_usage(root)
        over = _over_text(before, after, quota_bytes, quota_entries)
        if over:
            undone = roll_back(
                root, before=before, after=after, quota=quota_bytes, quota_entries=quota_entries
            )
            raise SandboxQuotaExceededError(
                f"QUOTA_EXCEEDED: {over}. Undone: {_undone_text(undone)}. Delete files to make room"
            )


class WorkspaceQuotaGuard:
    """``inner`` with its writing calls held to ``quota_bytes`` and ``quota_entries`` per
    workspace (``None``: that limit is off)."""

    def __init__(
        self,
        inner: SandboxBackend,
        *,
        quota_bytes: int | None,
        quota_entries: int | None = None,
        lock_wait_seconds: float = DEFAULT_LOCK_WAIT_SECONDS,
    ) -> None:
        self.inner = inner
        self.quota_bytes = quota_bytes
        self.quota_entries = quota_entries
        self.lock_wait_seconds = lock_wait_seconds
        self.name = inner.name
        self.isolates_network = inner.isolates_network

    def __getattr__(self, attribute: str) -> Any:
        # Whatever else the backend offers (release, lifecycle, bwrap_argv…) is its own.
        return getattr(self.inner, attribute)

    def run(self, spec: SandboxSpec) -> SandboxResult:
        """Run ``spec`` with the rest of the quota as its file-size limit, then check."""
        if not spec.workspace.writable:
            return self.inner.run(spec)
        root = resolve_workspace(spec.workspace.host_path)
        with workspace_turn(root, self.lock_wait_seconds):
            return self._run_measured(spec, root)

    def _run_measured(self, spec: SandboxSpec, root: Path) -> SandboxResult:
        quota = self.quota_bytes
        with held_to_quota(root, quota_bytes=quota, quota_entries=self.quota_entries) as before:
            left = spec.limits.file_size_bytes if quota is None else max(1, quota - before.total)
            limits = dataclasses.replace(
                spec.limits, file_size_bytes=min(spec.limits.file_size_bytes, left)
            )
            result = self.inner.run(dataclasses.replace(spec, limits=limits))
            if quota is not None and left < spec.limits.file_size_bytes:
                result = _explain_file_limit(result, left, quota)
            return result

    def probe(self) -> ProbeReport:
        """The inner backend's probe (the quota needs nothing of the machine)."""
        return self.inner.probe()

    def close(self) -> None:
        """Close the inner backend."""
        self.inner.close()


def guard_workspace(
    backend: SandboxBackend,
    quota_bytes: int | None,
    lock_wait_seconds: float = DEFAULT_LOCK_WAIT_SECONDS,
    *,
    quota_entries: int | None = None,
) -> SandboxBackend:
    """``backend`` behind the quota, or as it is when neither limit is configured."""
    if quota_bytes is None and quota_entries is None:
        return backend
    return WorkspaceQuotaGuard(
        backend,
        quota_bytes=quota_bytes,
        quota_entries=quota_entries,
        lock_wait_seconds=lock_wait_seconds,
    )

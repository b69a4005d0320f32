"""rlimits for one call, and counting a user's processes.

The spawn server's child joins its call's cgroup first (root may still write
there), then sets these rlimits (root may still raise hard limits), then
drops to the sandbox user.
"""

from __future__ import annotations

import os
import resource

from tools_app.sandbox.protocol import Limits

# rlimits bound virtual address space, which runs ahead of resident memory;
# when a cgroup enforces the real (resident) ceiling, give the address space
# this much room so the precise OOM report wins for ordinary memory bombs.
ADDRESS_SPACE_HEADROOM_WITH_CGROUP = 2


def rlimits_for(
    limits: Limits, *, cgroup_enforces_memory: bool, nproc: int | None = None
) -> list[tuple[int, tuple[int, int]]]:
    """The (resource, (soft, hard)) pairs for ``limits``.

    ``nproc`` overrides the process ceiling (a worker that cannot switch user
    counts its own processes too).
    """
    address_space = limits.memory_bytes * (
        ADDRESS_SPACE_HEADROOM_WITH_CGROUP if cgroup_enforces_memory else 1
    )
    if cgroup_enforces_memory and limits.address_space_bytes is not None:
        address_space = max(address_space, limits.address_space_bytes)
    processes = nproc if nproc is not None else limits.max_processes
    return [
        (resource.RLIMIT_AS, (address_space, address_space)),
        # Soft limit sends SIGXCPU, the hard one a second later SIGKILL.
        (resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1)),
        (resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NPROC, (processes, processes)),
    ]


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def count_user_processes(uid: int) -> int:
    """How many processes ``uid`` owns now (read from /proc)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count

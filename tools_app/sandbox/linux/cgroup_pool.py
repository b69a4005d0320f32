"""Reuse of empty per-call cgroups, so a call does not pay for mkdir and rmdir.

A group goes back to the pool only when it is empty, no OOM kill ever
happened in it, and almost no memory is still charged to it (page cache or
tmpfs files of the previous call would otherwise count against the next
one); otherwise it is removed as before. Limits are rewritten when the next
call's differ. Pools are per worker process: a forked child starts with none,
groups are named after the worker (its pid namespace and pid: ``owners``),
and groups left by workers of this namespace that no longer exist are removed
when a pool is first used.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from pathlib import Path

from tools_app.sandbox.linux.cgroups import CALL_PREFIX, CallCgroup, CgroupSupport
from tools_app.sandbox.linux.owners import left_by_gone_process

POOL_SIZE = 8
# A reused group may start with at most this much memory already charged.
REUSE_MAX_CHARGED_BYTES = 2 * 1024 * 1024

_pools: dict[tuple[Path | None, Path | None], list[CallCgroup]] = {}
_lock = threading.Lock()


def acquire_cgroup(support: CgroupSupport, *, memory_bytes: int, max_processes: int) -> CallCgroup:
    """An empty group with the call's limits: a pooled one, or a new one."""
    key = (support.memory_parent, support.pids_parent)
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = []
            _sweep_stale(support)
        group = pool.pop() if pool else None
    if group is not None:
        try:
            group.set_limits(memory_bytes=memory_bytes, max_processes=max_processes)
            return group
        except OSError:
            group.remove()
    group = CallCgroup(support, memory_bytes=memory_bytes, max_processes=max_processes)
    group.pool_key = key
    return group


def release_cgroup(group: CallCgroup) -> bool:
    """Kill what is left in ``group``, then pool it (True) or remove it (False).

    A pooled group is the next one ``acquire_cgroup`` hands out.
    """
    group.kill_all()
    key = group.pool_key
    reusable = (
        key is not None
        and group.counted_processes() == 0
        and not group.oom_killed()
        and 0 <= group.charged_bytes() <= REUSE_MAX_CHARGED_BYTES
    )
    if reusable and key is not None:
        with _lock:
            pool = _pools.get(key)
            if pool is not None and len(pool) < POOL_SIZE:
                pool.append(group)
                return True
    group.remove()
    return False


def drain_pools() -> None:
    """Remove every pooled group of this process (at exit, and in tests)."""
    with _lock:
        groups = [group for pool in _pools.values() for group in pool]
        for pool in _pools.values():
            pool.clear()
    for group in groups:
        group.remove()


def _sweep_stale(support: CgroupSupport) -> None:
    """Remove empty call groups whose worker process is gone."""
    for parent in {support.memory_parent, support.pids_parent}:
        if parent is None:
            continue
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                owner = entry.name.removeprefix(CALL_PREFIX).split("-", 1)[0]
                if entry.name.startswith(CALL_PREFIX) and left_by_gone_process(owner):
                    with contextlib.suppress(OSError):
                        os.rmdir(entry.path)


def _forget_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    _pools.clear()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(drain_pools)

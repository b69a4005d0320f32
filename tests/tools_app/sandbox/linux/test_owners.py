"""Leftovers are judged only by workers of the pid namespace that made them.

Real cgroups, directories and pid namespaces: a worker started in another pid
namespace (a container, another sandbox on the same kernel) sweeps the same
machine-wide cgroup parent and the same scratch base. Our pids mean nothing
there; before names carried the namespace, it removed this worker's empty
pooled groups and directories under it. The controls: what a gone process of
this namespace left is still removed, and the foreign worker's own leftovers too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

from common.testing import BASE_DIR, require
from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tools_app.sandbox.linux import cgroup_pool
from tools_app.sandbox.linux.cgroups import CALL_PREFIX, detect_cgroup_support
from tools_app.sandbox.linux.identity import resolve_identity
from tools_app.sandbox.linux.owners import left_by_gone_process, namespace_tag, owner_tag
from tools_app.sandbox.scratch import PREFIX as SCRATCH_PREFIX
from tools_app.sandbox.scratch import ScratchDir, drain_pools

# Run in a new pid namespace: the first use of a cgroup pool and of a scratch
# base there sweeps both, as a worker's first call does. It prints its own tag.
FOREIGN_WORKER = f"""
import sys
sys.path.insert(0, {str(BASE_DIR)!r})
from tools_app.sandbox.linux import cgroup_pool
from tools_app.sandbox.linux.cgroups import detect_cgroup_support
from tools_app.sandbox.linux.identity import resolve_identity
from tools_app.sandbox.linux.owners import owner_tag
from tools_app.sandbox.scratch import ScratchDir
group = cgroup_pool.acquire_cgroup(detect_cgroup_support(), memory_bytes=64 << 20, max_processes=8)
group.remove()
identity = resolve_identity({DEFAULT_SANDBOX_USER!r}, backend="test")
ScratchDir(__import__("pathlib").Path(sys.argv[1]), identity).remove()
print(owner_tag())
"""


def _in_new_pid_namespace(scratch_base: Path) -> str:
    require(os.geteuid() == 0 and shutil.which("unshare") is not None, "root and unshare(1)")
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", FOREIGN_WORKER,
         str(scratch_base)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _gone_pid() -> int:
    """A pid that was just used and has ended."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_worker_of_another_pid_namespace_leaves_our_pooled_group_alone(tmp_path: Path) -> None:
    support = detect_cgroup_support()
    require(support.available, "a memory and pids cgroup for sandboxed calls")
    cgroup_pool.drain_pools()  # earlier calls of this process may have filled the pool
    ours = cgroup_pool.acquire_cgroup(support, memory_bytes=64 << 20, max_processes=8)
    assert cgroup_pool.release_cgroup(ours), "pooled: empty and clean"
    # What a gone process of this namespace left (the control), named as it would be.
    assert support.memory_parent is not None and support.pids_parent is not None
    left = f"{CALL_PREFIX}{namespace_tag()}.{_gone_pid()}-{uuid.uuid4().hex[:12]}"
    leftovers = [support.memory_parent / left, support.pids_parent / left]
    for directory in leftovers:
        directory.mkdir(exist_ok=True)
    scratch = tmp_path / "scratch"
    try:
        theirs = _in_new_pid_namespace(scratch)
        assert theirs.split(".")[0] != namespace_tag()
        # The attack: its sweep ran over the same parents and did not touch our group.
        assert ours.memory_dir.is_dir() and ours.pids_dir.is_dir()
        assert all(d.is_dir() for d in leftovers), "not theirs to judge either"
        again = cgroup_pool.acquire_cgroup(support, memory_bytes=64 << 20, max_processes=8)
        assert again is ours, "the pooled group is handed out again"
        cgroup_pool.release_cgroup(again)
        # The control: a sweep in this namespace removes what the gone process left.
        cgroup_pool._sweep_stale(support)
        assert not any(d.exists() for d in leftovers)
        assert ours.memory_dir.is_dir(), "a live worker's group is kept"
    finally:
        for directory in leftovers:
            if directory.exists():
                directory.rmdir()
        cgroup_pool.drain_pools()
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_worker_of_another_pid_namespace_leaves_our_scratch_alone(tmp_path: Path) -> None:
    identity = resolve_identity(DEFAULT_SANDBOX_USER, backend="test")
    scratch = tmp_path / "scratch"
    try:
        ours = ScratchDir(scratch, identity)
        ours.remove()  # pooled: left empty
        assert ours.path.is_dir() and ours.path.name.startswith(f"{SCRATCH_PREFIX}{owner_tag()}-")
        gone = scratch / f"{SCRATCH_PREFIX}{namespace_tag()}.{_gone_pid()}-{os.urandom(8).hex()}"
        gone.mkdir()
        (gone / "left.txt").write_text("from a worker that died")
        theirs = _in_new_pid_namespace(scratch)
        # The attack: their first use swept the base; our pooled directory is still there.
        assert ours.path.is_dir()
        assert gone.is_dir(), "not theirs to judge"
        # Their own directory went back to their pool and was removed at their exit.
        assert not [p for p in scratch.iterdir() if p.name.startswith(f"{SCRATCH_PREFIX}{theirs}-")]
        # The control: a sweep in this namespace removes what the gone process left.
        from tools_app.sandbox import scratch as scratch_module

        scratch_module._sweep_stale(scratch)
        assert not gone.exists() and ours.path.is_dir()
    finally:
        drain_pools()
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_tag_is_judged_only_in_its_own_namespace() -> None:
    live = owner_tag()
    assert live == f"{namespace_tag()}.{os.getpid()}"
    assert not left_by_gone_process(live)
    assert left_by_gone_process(f"{namespace_tag()}.{_gone_pid()}")
    # Another namespace's tag, and the older bare-pid form, are never judged stale.
    other = "0" * 8 if namespace_tag() != "0" * 8 else "1" * 8
    assert not left_by_gone_process(f"{other}.{_gone_pid()}")
    assert not left_by_gone_process(str(_gone_pid()))

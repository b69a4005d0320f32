"""Which process left a directory or cgroup behind, and whether it is gone.

A worker names what it makes for its calls (pooled cgroups, scratch
directories, /etc copies) after itself, so that one starting later can remove
what a worker that died left. The pid alone does not say that: workers in
other pid namespaces (containers, sandboxes on one kernel) may share the
parent (a cgroup hierarchy is machine-wide, a volume may be shared), and
their pids mean nothing here, so a live worker's empty pooled group looked
stale to them and was removed under it. The tag therefore names the pid
namespace and the machine's boot as well: only leftovers of this namespace
are judged, by whether their pid still runs.
"""

from __future__ import annotations

import hashlib
import os

from tools_app.sandbox.linux.limits import pid_alive

_namespace: str | None = None


def namespace_tag() -> str:
    """Eight hex digits naming this boot of this machine and this pid namespace."""
    global _namespace
    if _namespace is None:
        try:
            with open("/proc/sys/kernel/random/boot_id", "rb") as boot:
                boot_id = boot.read().strip()
        except OSError:
            boot_id = b""
        try:
            pid_namespace = os.stat("/proc/self/ns/pid").st_ino
        except OSError:
            pid_namespace = 0
        digest = hashlib.sha256(boot_id + b"/" + str(pid_namespace).encode()).hexdigest()
        _namespace = digest[:8]
    return _namespace


def owner_tag() -> str:
    """``<namespace>.<pid>`` of this process: what a name it makes starts with."""
    return f"{namespace_tag()}.{os.getpid()}"


def left_by_gone_process(tag: str) -> bool:
    """Whether ``tag`` (from :func:`owner_tag`) names a process of this namespace that is gone.

    A tag of another namespace (or of an older form) is never judged stale: its
    owner may be running where its pid cannot be seen.
    """
    namespace, _, pid = tag.partition(".")
    return namespace == namespace_tag() and pid.isdigit() and not pid_alive(int(pid))


def _forget_in_child() -> None:
    # A child forked after its parent unshared a pid namespace lives in that one.
    global _namespace
    _namespace = None


os.register_at_fork(after_in_child=_forget_in_child)

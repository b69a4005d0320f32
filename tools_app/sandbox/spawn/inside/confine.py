"""A private root for a command of the subprocess backend (run in the spawn server's child).

Standard library only: the spawn server loads this file beside itself (it runs
with ``python3 -I -S``). The child, still privileged, leaves the worker's
mount, network, IPC and pid namespaces and pivots into a fresh root that holds
only what the plan names: read-only system directories and ``/etc`` entries,
a few devices, the call's workspace and scratch directory at their host
paths. Nothing else of the host exists there: no other workspace, no ``var/``,
no project directory, no host ``/tmp``, no sockets; the network namespace has
only a loopback that is down, so no port of the host answers.

When the worker is not root the child first makes a user namespace mapping
only its own ids, and every capability is dropped before the command runs.

The new pid namespace only takes effect for children, and its ``/proc`` can
only be mounted from inside it, so right after ``unshare`` the child forks
once more. The outer process (the pid the worker supervises) closes every
descriptor, waits and exits as the inner one did; the inner one builds the
root, is the namespace's init and runs the command, so it can neither see nor
signal any process outside (other agents' commands included).
"""

import contextlib
import ctypes
import os
import signal

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
# statvfs f_flag bits -> the mount flags a remount must keep (locked in a user namespace).
_KEPT_FLAGS = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
)
_libc.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
_libc.unshare.argtypes = (ctypes.c_int,)


class ConfineStepError(OSError):
    """A step of the private root failed; ``what`` names it."""


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise ConfineStepError(err, f"{what}: {os.strerror(err)}")


def _b(path):
    return None if path is None else os.fsencode(path)


def _mount(source, target, fstype, flags, data=None):
    _check(
        _libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)),
        f"mount {target}",
    )


# pivot_root(2) has no glibc wrapper everywhere; its system call number by machine.
_PIVOT_ROOT_SYSCALL = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}


def _pivot_root(new_root, put_old):
    number = _PIVOT_ROOT_SYSCALL.get(os.uname().machine)
    if number is None:
        raise ConfineStepError(0, f"pivot_root: unknown machine {os.uname().machine}")
    _check(_libc.syscall(number, _b(new_root), _b(put_old)), "pivot_root")


def _kept_flags(path):
    flags = os.statvfs(path).f_flag
    return sum(ms for st, ms in _KEPT_FLAGS if flags & st)


def _bind(source, target, *, read_only, device=False):
    _mount(source, target, None, MS_BIND | MS_REC)
    if device:
        return  # a device node needs its mount without nodev
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | _kept_flags(target)
    if read_only:
        flags |= MS_RDONLY
    _mount(None, target, None, flags)


def _make_path(root, path, *, directory):
    target = root + path
    parent = os.path.dirname(target)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    if directory:
        os.makedirs(target, mode=0o755, exist_ok=True)
    elif not os.path.lexists(target):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
    return target


def _write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _enter_user_namespace(uid, gid):
    # The spawn server is not dumpable, which makes /proc/self/* root's: the
    # process could not write its own maps. It is the worker's user either way.
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def drop_capabilities():
    """No capability left in any set, and none to gain through exec."""
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def enter_private_root(plan):
    """Leave the host's namespaces and pivot into the root ``plan`` describes.

    ``plan``: ``stage`` (an empty directory to build the root on), ``userns``
    ([uid, gid] when the worker is not root, else None), ``network`` (true
    keeps the host's network namespace) and ``steps``, in
    order: ``["symlink", target, path]``, ``["ro", source, path]`` (a file or
    directory bound read-only; skipped when the source is missing),
    ``["dev", path]`` (a device node), ``["dir", path, writable]`` (a directory
    that must exist, bound at its own path).
    """
    # The root's directories are for the sandbox user to pass through,
    # whatever the console's (private) umask.
    os.umask(0o022)
    flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID
    if not plan.get("network"):
        flags |= CLONE_NEWNET
    userns = plan.get("userns")
    if userns:
        flags |= CLONE_NEWUSER
    _check(_libc.unshare(flags), "unshare")
    if userns:
        _enter_user_namespace(*userns)
    # Only children enter the new pid namespace, and its /proc can only be
    # mounted from inside it: the root is built by the inner process.
    _split_for_pid_namespace()
    # Nothing done here may reach the host's mount table.
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = plan["stage"]
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for step in plan["steps"]:
        kind = step[0]
        if kind == "symlink":
            os.makedirs(os.path.dirname(root + step[2]), mode=0o755, exist_ok=True)
            os.symlink(step[1], root + step[2])
        elif kind == "ro":
            source, path = step[1], step[2]
            if os.path.exists(source):
                target = _make_path(root, path, directory=os.path.isdir(source))
                _bind(source, target, read_only=True)
        elif kind == "dev":
            if os.path.exists(step[1]):
                _bind(
                    step[1],
                    _make_path(root, step[1], directory=False),
                    read_only=False,
                    device=True,
                )
        elif kind == "dir":
            target = _make_path(root, step[1], directory=True)
            _bind(step[1], target, read_only=not step[2])
        else:
            raise ConfineStepError(0, f"unknown step {kind!r}")
    os.mkdir(root + "/proc", 0o555)
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(root)
    _pivot_root(".", ".")
    _check(_libc.umount2(b".", MNT_DETACH), "detach the host's root")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _split_for_pid_namespace():
    """Fork into the new pid namespace; returns in the inner process only.

    The outer process closes every descriptor (so the command's pipes end
    with the command), waits for the inner one and exits as it did.
    """
    pid = os.fork()
    if pid == 0:
        return
    os.closerange(0, 1 << 20)
    status = 127
    try:
        _, wait_status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(wait_status):
            sig = os.WTERMSIG(wait_status)
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, signal.SIG_DFL)  # refused for SIGKILL, default anyway
            os.kill(os.getpid(), sig)
            status = 128 + sig
        else:
            status = os.WEXITSTATUS(wait_status)
    finally:
        os._exit(status)

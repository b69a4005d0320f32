"""Per-call control groups: memory and process ceilings, OOM detection, clean kill.

rlimits bound one process; a cgroup bounds the whole tree a command spawns,
tells us when the kernel's OOM killer struck, and lets us kill every process
of the call even when one escaped its process group with ``setsid``.

cgroup v2 is used when its memory and pids controllers are delegated to the
worker's cgroup; otherwise the v1 ``memory`` and ``pids`` hierarchies when
they are mounted and writable. Every call gets its own group, nested under
the worker's current group so the machine's own accounting still applies.
Where neither exists, :func:`detect_cgroup_support` says why and backends
rely on rlimits alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tools_app.sandbox.linux.owners import owner_tag

GROUP_PARENT_NAME = "synthorg-sandbox"
# Per-call groups are named call-<owner tag>-<random> (``owners.owner_tag``).
CALL_PREFIX = "call-"


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    """Which cgroup flavour this machine offers the sandbox, or why none."""

    version: int | None
    reason: str
    memory_parent: Path | None = None
    pids_parent: Path | None = None

    @property
    def available(self) -> bool:
        """True when per-call groups can be created."""
        return self.version is not None


def _read_control(path: Path) -> str:
    """A cgroup control file's text; a few plain syscalls, as every call reads several."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii", "replace")


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) for every cgroup mount."""
    found: list[tuple[str, str, set[str]]] = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields = left.split()
            rest = right.split()
            if len(fields) < 5 or len(rest) < 3:
                continue
            fstype = rest[0]
            if fstype in ("cgroup", "cgroup2"):
                found.append((fields[4], fstype, set(rest[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """Controller name ('' for v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def _ensure_parent(base: Path) -> Path:
    parent = base / GROUP_PARENT_NAME
    parent.mkdir(exist_ok=True)
    return parent


def _detect_v2(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> CgroupSupport:
    v2 = [m for m in mounts if m[1] == "cgroup2"]
    if not v2:
        return CgroupSupport(None, "no cgroup v2 mount")
    mount_point = Path(v2[0][0])
    here = mount_point / own.get("", "/").lstrip("/")
    controllers = set((here / "cgroup.controllers").read_text().split()) if here.exists() else set()
    if not {"memory", "pids"} <= controllers:
        return CgroupSupport(
            None, f"cgroup v2 at {mount_point} does not offer memory and pids to this worker"
        )
    try:
        parent = _ensure_parent(here)
        (here / "cgroup.subtree_control").write_text("+memory +pids")
        (parent / "cgroup.subtree_control").write_text("+memory +pids")
    except OSError as exc:
        hint = (
            "the worker's cgroup holds processes; run it in a unit with Delegate=yes"
            if exc.errno == errno.EBUSY
            else exc.strerror
        )
        return CgroupSupport(None, f"cgroup v2 at {here} is not delegated: {hint}")
    return CgroupSupport(2, f"cgroup v2 at {parent}", memory_parent=parent, pids_parent=parent)


def _detect_v1(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> CgroupSupport:
    bases: dict[str, Path] = {}
    for controller in ("memory", "pids"):
        mount = next((m for m in mounts if m[1] == "cgroup" and controller in m[2]), None)
        if mount is None:
            return CgroupSupport(None, f"no cgroup v1 {controller} hierarchy mounted")
        bases[controller] = Path(mount[0]) / own.get(controller, "/").lstrip("/")
    try:
        memory_parent = _ensure_parent(bases["memory"])
        pids_parent = _ensure_parent(bases["pids"])
    except OSError as exc:
        return CgroupSupport(None, f"cgroup v1 hierarchies are not writable: {exc.strerror}")
    return CgroupSupport(
        1,
        f"cgroup v1 memory at {memory_parent}, pids at {pids_parent}",
        memory_parent=memory_parent,
        pids_parent=pids_parent,
    )


_cached_support: CgroupSupport | None = None


def detect_cgroup_support(*, refresh: bool = False) -> CgroupSupport:
    """Find a writable cgroup for per-call limits; the answer is cached per process."""
    global _cached_support
    if _cached_support is not None and not refresh:
        return _cached_support
    try:
        mounts = _mounts()
        own = _own_paths()
    except OSError as exc:
        _cached_support = CgroupSupport(None, f"cannot read cgroup mounts: {exc.strerror}")
        return _cached_support
    v2 = _detect_v2(mounts, own)
    if v2.available:
        _cached_support = v2
        return v2
    v1 = _detect_v1(mounts, own)
    _cached_support = v1 if v1.available else CgroupSupport(None, f"{v2.reason}; {v1.reason}")
    return _cached_support


class CallCgroup:
    """The control group(s) of one sandboxed call."""

    def __init__(
        self, support: CgroupSupport, *, memory_bytes: int | None, max_processes: int
    ) -> None:
        if not support.available or support.memory_parent is None or support.pids_parent is None:
            raise RuntimeError("cgroups are not available")
        name = f"{CALL_PREFIX}{owner_tag()}-{uuid.uuid4().hex[:12]}"
        self.version = support.version
        self.memory_dir = support.memory_parent / name
        self.pids_dir = support.pids_parent / name
        self._dirs = [self.memory_dir] if self.version == 2 else [self.memory_dir, self.pids_dir]
        # Read or written on every call: joined once here.
        v2 = self.version == 2
        self._procs = self.pids_dir / "cgroup.procs"
        self._pids_current = self.pids_dir / "pids.current"
        self._charged = self.memory_dir / ("memory.current" if v2 else "memory.usage_in_bytes")
        self._oom = self.memory_dir / ("memory.events" if v2 else "memory.oom_control")
        self._procs_files = tuple(str(d / "cgroup.procs") for d in self._dirs)
        self._limits: tuple[int | None, int] | None = None
        # Which pool the group returns to (set by cgroup_pool), if any.
        self.pool_key: tuple[Path | None, Path | None] | None = None
        for directory in self._dirs:
            directory.mkdir()
        try:
            if self.version == 2:
                with contextlib.suppress(OSError):
                    (self.memory_dir / "memory.swap.max").write_text("0")
            self.set_limits(memory_bytes=memory_bytes, max_processes=max_processes)
        except OSError:
            self.remove()
            raise

    def set_limits(self, *, memory_bytes: int | None, max_processes: int) -> None:
        """Apply the call's ceilings (a reused group keeps them when they match).

        ``memory_bytes`` None: no memory ceiling of the group's own (its parent's applies).
        """
        if self._limits == (memory_bytes, max_processes):
            return
        self._limits = None
        if self.version == 2:
            (self.memory_dir / "memory.max").write_text(
                "max" if memory_bytes is None else str(memory_bytes)
            )
        else:
            # memsw must stay >= the memory limit: order the writes accordingly.
            memsw = self.memory_dir / "memory.memsw.limit_in_bytes"
            wanted = "-1" if memory_bytes is None else str(memory_bytes)
            raising = memory_bytes is None or self._memory_limit() < memory_bytes
            if raising:
                with contextlib.suppress(OSError):
                    memsw.write_text(wanted)
            (self.memory_dir / "memory.limit_in_bytes").write_text(wanted)
            if not raising:
                with contextlib.suppress(OSError):
                    memsw.write_text(wanted)
        (self.pids_dir / "pids.max").write_text(str(max_processes))
        self._limits = (memory_bytes, max_processes)

    def _memory_limit(self) -> int:
        try:
            return int(_read_control(self.memory_dir / "memory.limit_in_bytes"))
        except (OSError, ValueError):
            return 0

    def counted_processes(self) -> int:
        """Tasks the pids controller still counts (exiting ones included), -1 if unknown."""
        try:
            return int(_read_control(self._pids_current))
        except (OSError, ValueError):
            return -1

    def charged_bytes(self) -> int:
        """Memory still charged to the group (page cache, tmpfs files) after its processes."""
        try:
            return int(_read_control(self._charged))
        except (OSError, ValueError):
            return -1

    @property
    def procs_files(self) -> tuple[str, ...]:
        """The ``cgroup.procs`` files a new process writes its pid to, to join."""
        return self._procs_files

    def pids(self) -> list[int]:
        """Processes currently in the call's group."""
        try:
            text = _read_control(self._procs)
        except OSError:
            return []
        return [int(word) for word in text.split()]

    def oom_killed(self) -> bool:
        """True when the kernel's OOM killer ended a process of this call."""
        try:
            text = _read_control(self._oom)
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def kill_all(self, *, rounds: int = 1000) -> None:
        """SIGKILL every process in the group until it is empty.

        A fork bomb keeps forking between reads, so loop; pids.max bounds how
        many can exist at once, so this ends.
        """
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.pids_dir / "cgroup.kill").write_text("1")
        for _ in range(rounds):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os.sched_yield()

    def remove(self) -> None:
        """Delete the group; a group still holding zombies is retried briefly."""
        for directory in self._dirs:
            # Killed processes leave the group when their exit completes, a
            # moment after SIGKILL; bounded retries cover that window.
            for attempt in range(400):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill_all(rounds=10)
                    time.sleep(0.0005 if attempt < 100 else 0.005)

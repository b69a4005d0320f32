"""What the subprocess backend's private root holds (the plan ``spawn_confine`` carries out).

Read-only: the system directories and the allowed ``/etc`` entries the
namespace backend also shows, and any extra PATH prefixes the config allows.
Read-write or read-only: the call's workspace, at its host path. Read-write:
the call's scratch directory (HOME and TMPDIR). A few devices. Nothing else:
no other workspace, no ``var/``, no project directory, no host ``/tmp``, no
sockets, no ``/proc`` (the command's pid namespace is its own anyway).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tools_app.sandbox.linux.etc_view import EtcLayout
from tools_app.sandbox.linux.identity import SandboxIdentity

SYSTEM_DIRS: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICES: tuple[str, ...] = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
STAGE_NAME = ".root"


def stage_dir(scratch_root: Path) -> Path:
    """The empty directory each call's private root is built on (in the call's own
    mount namespace, so calls never see each other's)."""
    stage = scratch_root / STAGE_NAME
    scratch_root.mkdir(mode=0o711, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(stage, 0o700)
    return stage


def private_root_plan(
    *,
    stage: Path,
    workspace: Path,
    writable: bool,
    scratch: Path,
    etc: EtcLayout,
    identity: SandboxIdentity,
    extra_ro: Iterable[str] = (),
    network: bool = False,
) -> dict[str, Any]:
    """The plan for one call (plain data: it travels to the spawn server)."""
    steps: list[list[Any]] = []
    for directory in SYSTEM_DIRS:
        if os.path.islink(directory):
            steps.append(["symlink", os.readlink(directory), directory])
        elif os.path.isdir(directory):
            steps.append(["ro", directory, directory])
    if etc.copy_dir is not None:
        steps.append(["ro", etc.copy_dir, "/etc"])
    steps += [["ro", path, path] for path in etc.binds]
    steps += [["ro", path, path] for path in extra_ro if not _under_system_dir(path)]
    steps += [["dev", path] for path in DEVICES]
    steps.append(["dir", str(workspace), writable])
    steps.append(["dir", str(scratch), True])
    running_as_root = os.geteuid() == 0
    return {
        "stage": str(stage),
        "userns": None if running_as_root else [identity.uid, identity.gid],
        "steps": steps,
        # The host's network stack only for a call that asked for the network.
        "network": network,
    }


def _under_system_dir(path: str) -> bool:
    norm = os.path.normpath(path)
    return any(norm == d or norm.startswith(d + "/") for d in SYSTEM_DIRS)

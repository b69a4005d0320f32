"""Which user a sandboxed command runs as.

A worker running as root never runs a tool as root: the command switches to a
dedicated unprivileged user (``synthorg-sandbox`` by default, created by
``docker/ensure-sandbox-user.sh``). When that user is missing the backend
refuses every call rather than run as root. A worker that is not root runs
commands as itself.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass

from tools_app.sandbox.errors import SandboxUserMissingError

ENSURE_USER_HINT = "create it with docker/ensure-sandbox-user.sh (needs root)"


@dataclass(frozen=True, slots=True)
class SandboxIdentity:
    """The uid/gid a command runs as, and whether the worker must switch to it."""

    uid: int
    gid: int
    name: str
    switch: bool


def resolve_identity(run_as_user: str, *, backend: str) -> SandboxIdentity:
    """The identity for commands of ``backend``; raises when root has no user to drop to."""
    if os.geteuid() != 0:
        uid = os.getuid()
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        return SandboxIdentity(uid=uid, gid=os.getgid(), name=name, switch=False)
    try:
        entry = pwd.getpwnam(run_as_user)
    except KeyError:
        raise SandboxUserMissingError(
            backend,
            f"the worker runs as root and the sandbox user {run_as_user!r} does not exist; "
            f"commands are never run as root; {ENSURE_USER_HINT}",
        ) from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise SandboxUserMissingError(
            backend,
            f"the sandbox user {run_as_user!r} has uid or gid 0; give it an unprivileged id",
        )
    return SandboxIdentity(uid=entry.pw_uid, gid=entry.pw_gid, name=run_as_user, switch=True)

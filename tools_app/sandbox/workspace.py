"""Workspace access for the unprivileged sandbox user.

Choice: the sandbox never changes permissions of a workspace on its own. A
worker running as root drops to ``synthorg-sandbox``, which must be able to
reach the workspace through ordinary Unix permissions; the console grants
that once, when it creates an agent's workspace, with :func:`grant_workspace`
(group ownership by the sandbox user's group, group read/search, plus group
write and setgid directories for read-write workspaces). Before each call
:func:`check_workspace_access` checks mode bits and refuses with the command
to run when access is missing, instead of failing half-way with EACCES.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tools_app.sandbox.errors import SandboxWorkspaceAccessError
from tools_app.sandbox.linux.identity import SandboxIdentity


def _permits(st: os.stat_result, identity: SandboxIdentity, want: int) -> bool:
    """``want`` is a combination of 4 (read), 2 (write), 1 (search/execute)."""
    if st.st_uid == identity.uid:
        granted = (st.st_mode >> 6) & 7
    elif st.st_gid == identity.gid:
        granted = (st.st_mode >> 3) & 7
    else:
        granted = st.st_mode & 7
    return granted & want == want


def check_workspace_access(
    workspace_real: Path, identity: SandboxIdentity, *, writable: bool
) -> None:
    """Refuse when the sandbox user cannot reach, read (or write) the workspace."""
    if not identity.switch:
        return
    for parent in reversed(workspace_real.parents):
        if not _permits(parent.stat(), identity, 1):
            raise SandboxWorkspaceAccessError(
                f"the sandbox user {identity.name!r} cannot enter {str(parent)!r} on the way to "
                f"the workspace; run: chmod o+x {parent}"
            )
    want = 4 | 1 | (2 if writable else 0)
    if not _permits(workspace_real.stat(), identity, want):
        mode = "rwX" if writable else "rX"
        raise SandboxWorkspaceAccessError(
            f"the sandbox user {identity.name!r} cannot {'write' if writable else 'read'} the "
            f"workspace {str(workspace_real)!r}; grant it with: chgrp -R {identity.name} "
            f"{workspace_real} && chmod -R g+{mode} {workspace_real}"
        )


def grant_workspace(path: Path, identity: SandboxIdentity, *, writable: bool) -> None:
    """Give the sandbox user's group access to a workspace the console created.

    Group-owns the tree by the sandbox group and adds group read/search (and
    write plus setgid on directories for read-write), leaving owner and other
    bits alone. Meant for directories the console made for an agent, not for
    arbitrary user trees.
    """
    extra_dir = stat.S_IRGRP | stat.S_IXGRP | (stat.S_IWGRP | stat.S_ISGID if writable else 0)
    extra_file = stat.S_IRGRP | (stat.S_IWGRP if writable else 0)
    for root, dirs, files in os.walk(path):
        for name in [root, *(os.path.join(root, d) for d in dirs)]:
            os.chown(name, -1, identity.gid, follow_symlinks=False)
            os.chmod(name, os.stat(name).st_mode | extra_dir)
        for name in (os.path.join(root, f) for f in files):
            if os.path.islink(name):
                continue
            os.chown(name, -1, identity.gid)
            os.chmod(name, os.stat(name).st_mode | extra_file)

"""The namespace backend's probes: really make the namespaces and say what the machine allows.

What ``NamespaceSandbox.probe`` reports (``synthorg_sandbox probe``, ``/healthz``), and
what the tests ask before they use the backend.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.linux.userns import (
    DISABLE_USERNS_FLAG,
    NESTED_USERNS_PROBE,
    nested_userns_verdict,
)
from tools_app.sandbox.protocol import Limits, SandboxResult, SandboxSpec, WorkspaceMount

if TYPE_CHECKING:
    from tools_app.sandbox.backends.namespace import NamespaceSandbox


def read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def _run_script(backend: NamespaceSandbox, script: str) -> SandboxResult:
    """Run ``sh -c script`` through ``backend`` in an empty workspace of its own."""
    with tempfile.TemporaryDirectory(prefix="synthorg-probe-") as tmp:
        os.chmod(tmp, 0o755)  # noqa: S103 - the sandbox user must enter it
        spec = SandboxSpec(
            argv=("sh", "-c", script),
            workspace=WorkspaceMount(Path(tmp)),
            timeout_seconds=10,
            limits=Limits(),
        )
        return backend.run(spec)


def probe_nested_userns(backend: NamespaceSandbox) -> str:
    """Try to make a user namespace inside the sandbox; say whether it was refused."""
    try:
        result = _run_script(backend, NESTED_USERNS_PROBE)
    except SandboxError as exc:
        return f"not checked: {exc.reason}"
    flag = "with" if DISABLE_USERNS_FLAG in backend.nested_userns_args() else "without"
    return f"{nested_userns_verdict(result.stdout)[1]} (bubblewrap {flag} {DISABLE_USERNS_FLAG})"


def probe_namespace(backend: NamespaceSandbox) -> tuple[bool, str]:
    """Run ``true`` through ``backend`` for real; (works, why or why not)."""
    if backend.bwrap_path is None:
        return False, "bubblewrap (bwrap) is not installed; apt-get install bubblewrap"
    if read_int("/proc/sys/user/max_user_namespaces") == 0:
        return False, "user namespaces are disabled (user.max_user_namespaces = 0)"
    try:
        result = _run_script(backend, "test -d /proc/self && cat /proc/self/uid_map")
    except SandboxError as exc:
        return False, exc.reason
    if result.exit_code != 0:
        detail = result.stderr.strip().splitlines()[-1:] or [f"exit {result.exit_code}"]
        return False, f"bubblewrap could not create the namespaces: {detail[0]}"
    return True, "created user, pid, net, ipc, uts and mount namespaces and ran `true`"

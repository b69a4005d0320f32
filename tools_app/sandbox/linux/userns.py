"""Nested user namespaces: whether a sandboxed process can make its own, and how we refuse it.

Inside a fresh user namespace a process is root over what it mounts, so
``unshare -r`` (or ``clone(CLONE_NEWUSER)``) hands a script mount and network
administration rights over its own little world: a large kernel surface the
sandbox has no reason to expose. bubblewrap 0.8 added ``--disable-userns``,
which sets ``user.max_user_namespaces`` to zero inside the sandbox's namespace;
Docker's default seccomp profile refuses ``unshare``/``clone`` with namespace
flags and ``setns`` to a process without CAP_SYS_ADMIN, which every sandbox
container drops.
"""

from __future__ import annotations

import functools
import subprocess

DISABLE_USERNS_FLAG = "--disable-userns"
# A shell line that tries every way to make a nested user namespace and prints
# one word per attempt: ``made`` when it worked, ``refused`` when it did not.
NESTED_USERNS_PROBE = (
    "for attempt in 'unshare -r true' 'unshare -Ur true'; do "
    "if $attempt >/dev/null 2>&1; then echo made; else echo refused; fi; done; "
    "python3 -c 'import ctypes,sys; libc=ctypes.CDLL(None, use_errno=True); "
    "sys.exit(0 if libc.unshare(0x10000000) == 0 else 1)' >/dev/null 2>&1 "
    "&& echo made || echo refused"
)
# How long asking bubblewrap for its options may take before it counts as too old.
_HELP_TIMEOUT_SECONDS = 10


@functools.cache
def bwrap_disables_userns(bwrap_path: str) -> bool:
    """Whether this bubblewrap binary offers ``--disable-userns`` (asked once per path)."""
    try:
        done = subprocess.run(
            [bwrap_path, "--help"],
            capture_output=True,
            text=True,
            timeout=_HELP_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return DISABLE_USERNS_FLAG in done.stdout + done.stderr


def nested_userns_verdict(stdout: str) -> tuple[bool, str]:
    """(refused, words) from the output of :data:`NESTED_USERNS_PROBE`."""
    words = stdout.split()
    if len(words) != 3 or any(w not in ("made", "refused") for w in words):
        return False, f"the nested-namespace check gave no verdict: {stdout.strip()[:200]!r}"
    if all(w == "refused" for w in words):
        return True, "refused (unshare -r, unshare -Ur and unshare(CLONE_NEWUSER) all fail)"
    return False, "ALLOWED: a sandboxed process can create a nested user namespace"

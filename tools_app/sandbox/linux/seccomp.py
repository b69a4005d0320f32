"""The seccomp profile every sandbox container runs under: Docker's default, made stricter.

``docker/seccomp-default.json`` is Docker's default profile as published in
moby/profiles (Apache-2.0, unchanged). Docker lets a process with CAP_SYS_ADMIN
call ``unshare``, ``setns``, ``mount`` and ``clone`` with namespace flags; the
sandbox drops every capability, so that exception never applies today, but a
capability that slips back in (a changed ``cap_drop``, an engine default) must
not reopen nested namespaces. So those calls are taken out of every rule that
allows them unconditionally or by capability, the ``clone`` rules that refuse
namespace flags apply whatever the capabilities, ``clone3`` (whose flags seccomp
cannot see) always answers ENOSYS so the C library falls back to ``clone``, and
an explicit rule refuses the namespace calls with EPERM.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any, Final

DEFAULT_PROFILE: Final = Path(__file__).resolve().parents[3] / "docker" / "seccomp-default.json"
NAMESPACE_SYSCALLS: Final = frozenset(
    {
        "unshare",
        "setns",
        "mount",
        "umount2",
        "pivot_root",
        "mount_setattr",
        "move_mount",
        "open_tree",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
    }
)
# clone may run (new threads and processes) only through the rules that mask its flags.
_CLONE: Final = frozenset({"clone", "clone3"})
EPERM: Final = 1


def _tightened(rule: dict[str, Any]) -> dict[str, Any] | None:
    names = rule.get("names") or []
    if rule.get("action") == "SCMP_ACT_ALLOW" and not rule.get("args"):
        names = [n for n in names if n not in NAMESPACE_SYSCALLS | _CLONE]
        if not names:
            return None
        rule = {**rule, "names": names}
    if set(names) & _CLONE:
        excludes = {k: v for k, v in (rule.get("excludes") or {}).items() if k != "caps"}
        includes = {k: v for k, v in (rule.get("includes") or {}).items() if k != "caps"}
        rule = {**rule, "excludes": excludes, "includes": includes}
    return rule


@functools.cache
def sandbox_seccomp_profile() -> str:
    """The profile as the JSON text Docker's ``seccomp=`` security option takes."""
    profile: dict[str, Any] = json.loads(DEFAULT_PROFILE.read_text(encoding="utf-8"))
    rules = [_tightened(copy.deepcopy(rule)) for rule in profile["syscalls"]]
    profile["syscalls"] = [rule for rule in rules if rule is not None]
    profile["syscalls"].append(
        {
            "names": sorted(NAMESPACE_SYSCALLS),
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": EPERM,
            "comment": "synthorg: no namespaces or mounts inside a sandbox container",
        }
    )
    return json.dumps(profile, separators=(",", ":"))

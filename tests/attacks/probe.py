"""What a process can reach: one program run inside each backend and as the bare sandbox user.

``PROBE_SOURCE`` runs with ``python3 -I -S -c SOURCE JSON`` (standard library
only) and prints, for each attempt, ``"ok"`` or the name of the error.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER

PROBE_SOURCE = r"""
import json, os, socket, sys
plan = json.loads(sys.argv[1])
out = {"read": {}, "list": {}, "tcp": {}, "unix": {}}
def attempt(action):
    try:
        action()
        return "ok"
    except Exception as exc:
        return type(exc).__name__
def read(path):
    with open(path, "rb") as handle:
        handle.read(1)
def tcp(host, port):
    with socket.create_connection((host, port), timeout=2):
        pass
def unix(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        sock.connect(path)
for path in plan.get("read", []):
    out["read"][path] = attempt(lambda: read(path))
for path in plan.get("list", []):
    out["list"][path] = attempt(lambda: os.listdir(path))
for host, port in plan.get("tcp", []):
    out["tcp"][f"{host}:{port}"] = attempt(lambda: tcp(host, port))
for path in plan.get("unix", []):
    out["unix"][path] = attempt(lambda: unix(path))
print(json.dumps(out))
"""
PROBE_ARGV = ("python3", "-I", "-S", "-c", PROBE_SOURCE)


def probe_argv(plan: Mapping[str, Any]) -> tuple[str, ...]:
    return (*PROBE_ARGV, json.dumps(plan))


def parse(stdout: str) -> dict[str, dict[str, str]]:
    return dict(json.loads(stdout))


def probe_here(plan: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The same attempts from this (the console's) process: the controls."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PROBE_SOURCE, json.dumps(plan)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return parse(done.stdout)


def probe_as_sandbox_user(plan: dict[str, Any], *, cwd: str = "/") -> dict[str, dict[str, str]]:
    """The attempts as the bare sandbox user: no namespace, only file permissions."""
    entry = pwd.getpwnam(DEFAULT_SANDBOX_USER)
    assert os.geteuid() == 0, "switching to the sandbox user needs root"
    done = subprocess.run(
        ["/usr/bin/python3", "-I", "-S", "-c", PROBE_SOURCE, json.dumps(plan)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=cwd,
        user=entry.pw_uid,
        group=entry.pw_gid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    return parse(done.stdout)

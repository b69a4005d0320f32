"""The subprocess backend's private root when the worker is not root (a user namespace).

A worker started by an ordinary user (``make run`` without root) runs the same
backend; the child then maps only the worker's own ids in a user namespace and
drops every capability before the command runs. The worker here is a real
process running as the unprivileged sandbox user, with the system python.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from common.testing import require

BASE_DIR = Path(__file__).resolve().parents[4]
SYSTEM_PYTHON = "/usr/bin/python3"
WORKER = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tools_app.sandbox.protocol import MountMode, SandboxSpec, WorkspaceMount
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
root = Path(sys.argv[2])
backend = SubprocessSandbox(scratch_root=root / "scratch", use_cgroup=False)
script = (
    "import os\\n"
    "found = {}\\n"
    "for name in ('mine.txt', sys.argv[1]):\\n"
    "    try:\\n"
    "        found[name] = open(name).read()\\n"
    "    except OSError as exc:\\n"
    "        found[name] = type(exc).__name__\\n"
    "caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')]\\n"
    "print(json.dumps({'files': found, 'caps': caps[0], 'pid': os.getpid()}))\\n"
)
spec = SandboxSpec(
    argv=("python3", "-c", "import json, sys\\n" + script, str(root / "other" / "theirs.txt")),
    workspace=WorkspaceMount(root / "mine", MountMode.READ_ONLY),
)
result = backend.run(spec)
print(json.dumps({"exit": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}))
"""


def test_a_worker_that_is_not_root_confines_its_commands_too() -> None:
    require(os.geteuid() == 0, "the test starts the worker as the unprivileged sandbox user")
    require(os.path.exists(SYSTEM_PYTHON), "a system python3 the sandbox user can run")
    root = Path(tempfile.mkdtemp(prefix="synthorg-nonroot-"))
    try:
        for name, text in (("mine", "my own work\n"), ("other", "another agent's work\n")):
            (root / name).mkdir()
            (root / name / f"{'mine' if name == 'mine' else 'theirs'}.txt").write_text(text)
        shutil.chown(root, "synthorg-sandbox", "synthorg-sandbox")
        for path in root.rglob("*"):
            shutil.chown(path, "synthorg-sandbox", "synthorg-sandbox")
        root.chmod(0o755)
        user = pwd.getpwnam("synthorg-sandbox")
        done = subprocess.run(
            [SYSTEM_PYTHON, "-c", WORKER, str(BASE_DIR), str(root)],
            user=user.pw_uid,
            group=user.pw_gid,
            extra_groups=[],
            cwd=str(root),
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
        assert outcome["exit"] == 0, outcome["stderr"]
        seen = json.loads(outcome["stdout"])
        # Control: its own workspace; the attack: the other directory, which the
        # same user owns and could read without the private root.
        assert seen["files"]["mine.txt"] == "my own work\n"
        assert seen["files"][str(root / "other" / "theirs.txt")] == "FileNotFoundError"
        assert (root / "other" / "theirs.txt").read_text() == "another agent's work\n"
        assert seen["caps"] == "0000000000000000"
        assert seen["pid"] == 1
    finally:
        shutil.rmtree(root, ignore_errors=True)

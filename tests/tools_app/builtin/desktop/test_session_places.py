"""The machine's directory of desktop sessions, made under the launcher's private umask:
the sandbox's user passes through it (and through what was made for it) to the session
it binds, or the console says which directory stops it."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.platform.private_state import PRIVATE_UMASK
from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tools_app.builtin.desktop.session import DesktopSessionError, runtime_root


@pytest.fixture
def top() -> Iterator[Path]:
    # Outside /tmp, whose pytest directories are private to root.
    made = Path(f"/run/synthorg-test-places-{uuid.uuid4().hex[:8]}")
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def private_umask() -> Iterator[None]:
    before = os.umask(PRIVATE_UMASK)
    yield
    os.umask(before)


def _sandbox_user_stats(path: Path) -> subprocess.CompletedProcess[str]:
    """``stat PATH`` as the sandbox's user: it needs search on every directory above."""
    user = pwd.getpwnam(DEFAULT_SANDBOX_USER)
    return subprocess.run(
        ["stat", "-c", "%n", str(path)],
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.usefixtures("private_umask")
def test_directories_made_for_the_sessions_are_passed_through(top: Path) -> None:
    root = runtime_root(str(top / "machine" / "sessions"))
    for made in (top, top / "machine", root):
        assert stat.S_IMODE(made.stat().st_mode) == 0o711, made
    probe = root / "session" / "control"
    probe.mkdir(parents=True)
    os.chmod(root / "session", 0o711)
    assert _sandbox_user_stats(probe).returncode == 0, _sandbox_user_stats(probe).stderr
    # Listing stays the console's own.
    listed = subprocess.run(
        ["ls", str(root)],
        user=DEFAULT_SANDBOX_USER,
        capture_output=True,
        text=True,
        check=False,
    )
    assert listed.returncode != 0 and "Permission denied" in listed.stderr


@pytest.mark.usefixtures("private_umask")
def test_a_closed_directory_above_is_named(top: Path) -> None:
    top.mkdir(mode=0o700)
    os.chmod(top, 0o700)
    with pytest.raises(DesktopSessionError) as refused:
        runtime_root(str(top / "sessions"))
    assert refused.value.code == "DESKTOP_UNAVAILABLE"
    assert str(top) in str(refused.value) and "desktop.runtime_dir" in str(refused.value)
    # Control: opened for passing through, the same place is made and usable.
    os.chmod(top, 0o711)
    root = runtime_root(str(top / "sessions"))
    assert _sandbox_user_stats(root).returncode == 0

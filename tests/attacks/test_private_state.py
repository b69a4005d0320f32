"""The console's state under var/ is private from the first write, and the launcher repairs it.

A fresh var/ is made by the console's own commands (migrate on SQLite, the demo
organisation) and its embedded Redis; then every file in it is read, and the
Redis socket connected to, as the sandbox user. Controls: a workspace file is
readable by that user, and the console's process reaches the socket.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.platform.private_state import loose_modes
from common.testing import wait_until
from synthorg_site.launcher.embedded_redis import redis_server_argv
from synthorg_site.launcher.private_state import SHOWN_REPAIRS
from tests.attacks.probe import probe_as_sandbox_user

BASE_DIR = Path(__file__).resolve().parents[2]
CONSOLE_COMMAND_SECONDS = 300


@pytest.fixture
def fresh_var() -> Iterator[Path]:
    """An empty var/ in a directory anyone may pass through (as /srv or a home would be)."""
    parent = Path(tempfile.mkdtemp(prefix="synthorg-var-"))
    parent.chmod(0o755)
    yield parent / "var"
    shutil.rmtree(parent, ignore_errors=True)


def console_env(var: Path) -> dict[str, str]:
    suite_only = ("DATABASE_URL", "SECRET_KEY", "PROMETHEUS_MULTIPROC_DIR")
    env = {k: v for k, v in os.environ.items() if k not in suite_only}
    env.update(SYNTHORG_ENV="test", SYNTHORG_VAR_DIR=str(var))
    return env


def manage(var: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env=console_env(var),
        check=True,
        capture_output=True,
        timeout=CONSOLE_COMMAND_SECONDS,
    )


def state_files(var: Path) -> list[Path]:
    found: list[Path] = []
    for root, dirs, files in os.walk(var):
        if Path(root) == var:
            dirs[:] = [d for d in dirs if d != "workspaces"]
        found += [Path(root) / name for name in files]
    return found


def socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        sock.connect(str(path))
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")


def test_a_fresh_consoles_state_is_unreadable_by_the_sandbox_user(fresh_var: Path) -> None:
    manage(fresh_var, "migrate", "--noinput", "-v0")
    manage(fresh_var, "synthorg_demo")
    database = fresh_var / "synthorg.sqlite3"
    # A connection in WAL mode, as the running console holds: -wal and -shm exist.
    held = sqlite3.connect(database)
    held.execute("PRAGMA journal_mode=WAL")
    held.execute("CREATE TABLE IF NOT EXISTS probe_touch (x)")
    held.commit()
    redis_socket = fresh_var / "redis" / "redis.sock"
    argv = redis_server_argv(socket=redis_socket, data_dir=fresh_var / "redis")
    redis = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: socket_answers(redis_socket), timeout=30, what="the embedded Redis")
        files = state_files(fresh_var)
        names = {str(p.relative_to(fresh_var)) for p in files}
        for expected in (
            "synthorg.sqlite3",
            "synthorg.sqlite3-wal",
            "synthorg.sqlite3-shm",
            "secret_key",
            "demo-credentials.txt",
            "redis/redis.sock",
        ):
            assert expected in names, sorted(names)
        assert loose_modes(fresh_var) == [], "created private from the first write"
        workspace = next((fresh_var / "workspaces").iterdir())
        readable = workspace / "notes.txt"
        readable.write_text("an agent's file\n")
        readable.chmod(0o664)
        regular = [str(p) for p in files if not stat.S_ISSOCK(p.lstat().st_mode)]
        seen = probe_as_sandbox_user(
            {"read": [*regular, str(readable)], "unix": [str(redis_socket)]}
        )
        assert seen["read"].pop(str(readable)) == "ok"  # control: a workspace file
        assert set(seen["read"].values()) == {"PermissionError"}, seen["read"]
        assert seen["unix"][str(redis_socket)] == "PermissionError"
        assert socket_answers(redis_socket)  # control: the console's process reaches it
    finally:
        held.close()
        redis.terminate()
        redis.wait(timeout=30)


def test_the_launcher_repairs_and_names_looser_modes(fresh_var: Path) -> None:
    manage(fresh_var, "migrate", "--noinput", "-v0")
    secret = fresh_var / "secret_key"
    database = fresh_var / "synthorg.sqlite3"
    static = fresh_var / "static"
    secret.chmod(0o644)
    database.chmod(0o666)
    static.chmod(0o755)
    fresh_var.chmod(0o755)
    workspace = fresh_var / "workspaces" / "agent-one"
    workspace.mkdir()
    workspace.chmod(0o775)
    (workspace / "notes.txt").write_text("an agent's file\n")
    (workspace / "notes.txt").chmod(0o664)
    # A tool set made with a loose umask (many files): counted in one line, not one each.
    tools = fresh_var / "tools"
    tools.mkdir(mode=0o755)
    for n in range(40):
        (tools / f"module{n}.py").write_text("# a tool's file\n")
        (tools / f"module{n}.py").chmod(0o644)
    loose = {entry.path for entry in loose_modes(fresh_var)}
    assert {secret, database, static, fresh_var} <= loose
    seen = probe_as_sandbox_user({"read": [str(secret)]})
    assert seen["read"][str(secret)] == "ok"  # the looser mode really let it in

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from synthorg_site.launcher.private_state import secure_private_state as s;s(print)",
        ],
        cwd=BASE_DIR,
        env=console_env(fresh_var),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    for path in (secret, database, static):
        assert f"warning: {path} was" in done.stdout
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == SHOWN_REPAIRS + 1, done.stdout
    # var/ itself is set by the layout first, silently; everything else loose is repaired.
    repaired = len(loose - {fresh_var})
    assert f"{repaired - SHOWN_REPAIRS} more entries under {fresh_var}" in warnings[-1]
    assert loose_modes(fresh_var) == []
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    assert stat.S_IMODE(fresh_var.stat().st_mode) == 0o711
    after = probe_as_sandbox_user(
        {"read": [str(secret), str(database), str(workspace / "notes.txt")]}
    )
    assert after["read"][str(secret)] == "PermissionError"
    assert after["read"][str(database)] == "PermissionError"
    # Control: the agents' workspaces are theirs and left as they were.
    assert stat.S_IMODE(workspace.stat().st_mode) == 0o775
    assert after["read"][str(workspace / "notes.txt")] == "ok"

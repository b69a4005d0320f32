"""The sandbox walls from every backend: the console's files, its listeners, other workspaces.

Every workspace is granted to the same unprivileged sandbox user, and the test
run's Redis socket is open to everyone: file permissions alone would let the
sandbox user in (shown beside each attack). Only the backend's walls keep a
command to its own workspace. Each attack has its control: the same attempt
on the command's own workspace, or from the console's process, succeeds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from tests.attacks.probe import parse, probe_argv, probe_as_sandbox_user, probe_here
from tools_app.sandbox.protocol import MountMode, Owner, SandboxBackend, SandboxSpec, WorkspaceMount

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

REACHED = "ok"


def run_probe(backend: SandboxBackend, workspace: Path, plan: Mapping[str, object]) -> dict:
    spec = SandboxSpec(
        argv=probe_argv(plan),
        workspace=WorkspaceMount(workspace, MountMode.READ_ONLY),
        timeout_seconds=60,
        owner=Owner("attacker"),
    )
    result = backend.run(spec)
    assert result.exit_code == 0, result.stderr
    return parse(result.stdout)


def console_files() -> list[str]:
    """Every file of the console's state under var/ (the agents' workspaces aside)."""
    var = Path(settings.VAR_DIR)
    found: list[str] = []
    for root, dirs, files in os.walk(var):
        if Path(root) == var:
            dirs[:] = [d for d in dirs if d != "workspaces"]
        found += [os.path.join(root, name) for name in files]
    assert str(var / "secret_key") in found, "the secret key is part of the state"
    return sorted(found)


def test_no_backend_reads_the_consoles_files(backend: SandboxBackend, own_workspace: Path) -> None:
    var = str(settings.VAR_DIR)
    plan = {"read": [*console_files(), "hello.txt"], "list": [var, "."]}
    seen = run_probe(backend, own_workspace, plan)
    assert seen["read"].pop("hello.txt") == REACHED  # control: its own workspace
    assert seen["list"].pop(".") == REACHED
    assert seen["read"] and REACHED not in seen["read"].values(), seen["read"]
    assert seen["list"][var] != REACHED


def test_the_bare_sandbox_user_cannot_read_the_consoles_files(own_workspace: Path) -> None:
    """Below the walls, the files themselves are private to the console's user."""
    plan = {"read": [*console_files(), str(own_workspace / "hello.txt")]}
    seen = probe_as_sandbox_user(plan)
    assert seen["read"].pop(str(own_workspace / "hello.txt")) == REACHED  # control
    assert set(seen["read"].values()) == {"PermissionError"}, seen["read"]


def test_no_backend_reaches_another_agents_workspace(
    backend: SandboxBackend, own_workspace: Path, other_workspace: Path
) -> None:
    theirs = str(other_workspace / "other-agent.txt")
    plan = {"read": [theirs, "hello.txt"], "list": [str(other_workspace), "."]}
    # Permissions alone would let the sandbox user in: only the walls stop it.
    bare = probe_as_sandbox_user(plan, cwd=str(own_workspace))
    assert bare["read"][theirs] == REACHED and bare["list"][str(other_workspace)] == REACHED
    seen = run_probe(backend, own_workspace, plan)
    assert seen["read"]["hello.txt"] == REACHED and seen["list"]["."] == REACHED  # control
    assert seen["read"][theirs] != REACHED
    assert seen["list"][str(other_workspace)] != REACHED


def test_no_backend_connects_to_the_consoles_listeners(
    backend: SandboxBackend, own_workspace: Path, daphne_server: str
) -> None:
    http = urlsplit(daphne_server)
    database = settings.DATABASES["default"]
    redis = urlsplit(settings.REDIS_URL)
    plan: dict[str, list] = {"tcp": [[http.hostname, http.port]], "unix": []}
    if database.get("HOST") and str(database["HOST"]).startswith("/"):
        plan["unix"].append(os.path.join(str(database["HOST"]), f".s.PGSQL.{database['PORT']}"))
    else:
        plan["tcp"].append([database.get("HOST") or "127.0.0.1", int(database["PORT"])])
    if redis.scheme == "unix":
        plan["unix"].append(redis.path)
    else:
        plan["tcp"].append([redis.hostname, redis.port or 6379])
    here = probe_here(plan)  # control: the console reaches each of them
    assert set(here["tcp"].values()) | set(here["unix"].values()) == {REACHED}, here
    seen = run_probe(backend, own_workspace, plan)
    reached = [k for group in ("tcp", "unix") for k, v in seen[group].items() if v == REACHED]
    assert reached == [], seen
    assert len(seen["tcp"]) + len(seen["unix"]) == 3


def test_no_backend_sees_the_project_the_hosts_tmp_or_root(
    backend: SandboxBackend, own_workspace: Path
) -> None:
    project = Path(settings.BASE_DIR)
    host_tmp = Path("/tmp") / f"synthorg-host-tmp-{os.getpid()}.txt"
    host_tmp.write_text("a file in the host's /tmp\n")
    host_tmp.chmod(0o644)
    try:
        plan = {
            "read": [str(project / "manage.py"), str(project / "pyproject.toml"), str(host_tmp)],
            "list": [str(project), "/root", "/tmp/synthorg-test-workspaces"],
        }
        # The project and the host's /tmp are world-readable: only the walls stop it.
        bare = probe_as_sandbox_user(plan)
        assert bare["read"][str(host_tmp)] == REACHED
        assert bare["read"][str(project / "manage.py")] == REACHED
        seen = run_probe(backend, own_workspace, {**plan, "read": [*plan["read"], "hello.txt"]})
        assert seen["read"].pop("hello.txt") == REACHED  # control
        assert REACHED not in seen["read"].values(), seen["read"]
        assert seen["list"][str(project)] != REACHED
        assert seen["list"]["/root"] != REACHED
    finally:
        host_tmp.unlink()

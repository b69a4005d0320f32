"""Nested user namespaces are refused inside the namespace and Docker sandboxes.

A script (as an agent with terminal ``full`` would run it: ``sh script.sh`` in its
workspace) tries ``unshare -r``, ``unshare -Ur true`` and ``unshare(CLONE_NEWUSER)``
through ctypes (Python 3.11 has no ``os.unshare``). The control is the same script
with the namespace line swapped for an ordinary command, in the same sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from common.vocabulary.sandbox import SANDBOX_IMAGE
from tests.tools_app.builtin.fs_fixtures import make_context
from tests.tools_app.sandbox.backends.docker.test_backend import SETTINGS
from tests.tools_app.sandbox.backends.test_namespace import namespace_backend
from tools_app.builtin.terminal import tools as terminal
from tools_app.sandbox.backends.docker.backend import DockerSandbox
from tools_app.sandbox.backends.docker.probe import probe_docker
from tools_app.sandbox.linux.seccomp import sandbox_seccomp_profile
from tools_app.sandbox.linux.userns import DISABLE_USERNS_FLAG
from tools_app.sandbox.protocol import (
    MountMode,
    Owner,
    SandboxBackend,
    SandboxSpec,
    WorkspaceMount,
)

ATTEMPTS = {
    "unshare -r": "unshare -r sh -c 'echo NESTED-ROOT; id -u'",
    "unshare -Ur true": "unshare -Ur true && echo NESTED-ROOT",
    "unshare(CLONE_NEWUSER)": (
        "python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
        'print("NESTED-ROOT" if libc.unshare(0x10000000) == 0 else "refused")\''
    ),
}
CONTROL = "echo PLAIN-WORK; id -u"


def run_script(backend: SandboxBackend, workspace: Path, line: str) -> str:
    script = workspace / "script.sh"
    script.write_text(f"#!/bin/sh\n{line}\necho script-finished\n")
    script.chmod(0o644)
    spec = SandboxSpec(
        argv=("sh", "script.sh"),
        workspace=WorkspaceMount(workspace, MountMode.READ_WRITE),
        timeout_seconds=20,
    )
    result = backend.run(spec)
    return result.stdout + result.stderr


@pytest.fixture(params=["namespace", "docker"])
def backend(request: pytest.FixtureRequest) -> Iterator[SandboxBackend]:
    if request.param == "docker":
        request.getfixturevalue("docker_client")
        made: SandboxBackend = DockerSandbox(SETTINGS)
    else:
        made = namespace_backend()
    yield made
    made.close()


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_a_script_cannot_make_a_nested_user_namespace(backend, workspace, attempt):
    control = run_script(backend, workspace, CONTROL)
    assert "PLAIN-WORK" in control and "script-finished" in control
    attacked = run_script(backend, workspace, ATTEMPTS[attempt])
    assert "script-finished" in attacked  # the script ran; only the namespace was refused
    assert "NESTED-ROOT" not in attacked


def test_bubblewrap_is_told_to_disable_user_namespaces(workspace):
    backend = namespace_backend()
    spec = SandboxSpec(argv=("true",), workspace=WorkspaceMount(workspace))
    assert DISABLE_USERNS_FLAG in backend.bwrap_argv(spec, workspace, "/workspace")


def test_probes_report_nested_namespaces_refused(docker_client):
    namespace = namespace_backend().probe()
    assert namespace.ok
    assert str(namespace.details["nested_user_namespaces"]).startswith("refused")
    docker = DockerSandbox(SETTINGS)
    try:
        report = probe_docker(docker)
    finally:
        docker.close()
    assert report.ok, report.reason
    verdict = str(report.details["nested_user_namespaces"])
    assert verdict.startswith("refused") and "seccomp filter on" in verdict


def _unshare_in_container(client, security_opt: list[str]) -> tuple[int, str]:
    """``unshare -U true`` as root with CAP_SYS_ADMIN: the profile alone must refuse it."""
    container = client.containers.run(
        SANDBOX_IMAGE,
        ["sh", "-c", "unshare -U true && echo NESTED-USERNS; unshare -m true && echo NESTED-MOUNT"],
        user="0:0",
        cap_drop=["ALL"],
        cap_add=["SYS_ADMIN"],
        network_mode="none",
        security_opt=security_opt,
        labels={"synthorg.test": "seccomp"},
        detach=True,
    )
    try:
        status = container.wait(timeout=60)["StatusCode"]
        return status, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


def test_the_containers_seccomp_profile_refuses_namespaces_even_with_cap_sys_admin(
    docker_client,
):
    # Control: under the engine's default profile CAP_SYS_ADMIN opens both.
    _, default_output = _unshare_in_container(docker_client, ["no-new-privileges"])
    assert "NESTED-USERNS" in default_output
    profile = f"seccomp={sandbox_seccomp_profile()}"
    _, output = _unshare_in_container(docker_client, ["no-new-privileges", profile])
    assert "NESTED-USERNS" not in output and "NESTED-MOUNT" not in output, output


def test_sandbox_containers_carry_the_profile(docker_client, workspace):
    backend = DockerSandbox(SETTINGS)
    try:
        spec = SandboxSpec(
            argv=("true",), workspace=WorkspaceMount(workspace), owner=Owner("seccomp-test")
        )
        result = backend.run(spec)
        host = docker_client.containers.get(result.container_id).attrs["HostConfig"]
    finally:
        backend.close()
    assert any(opt.startswith("seccomp=") and "synthorg" in opt for opt in host["SecurityOpt"])


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_shell_command_under_terminal_full_cannot_nest_a_user_namespace(
    backend, workspace, attempt
):
    """The same scripts as an agent runs them: shell_command ``sh script.sh``."""

    def shell(line: str) -> str:
        (workspace / "script.sh").write_text(f"#!/bin/sh\n{line}\necho script-finished\n")
        (workspace / "script.sh").chmod(0o644)
        context = make_context(workspace, backend, terminal="full")
        outcome = terminal.shell_command.run(context, {"argv": ["sh", "script.sh"]})
        return outcome.content

    control = shell(CONTROL)
    assert "PLAIN-WORK" in control and "script-finished" in control
    attacked = shell(ATTEMPTS[attempt])
    assert "script-finished" in attacked and "NESTED-ROOT" not in attacked

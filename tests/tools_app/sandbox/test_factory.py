"""Backends per category from config; no fallback when one cannot run."""

from __future__ import annotations

import pytest

from common.config.sandbox import SandboxingConfig
from tools_app.sandbox.backends.docker.backend import DockerSandbox
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.errors import SandboxConfigInvalidError, SandboxUnavailableError
from tools_app.sandbox.factory import build_sandbox_backends, resolve_backend_for_category
from tools_app.sandbox.protocol import NetworkPolicy, SandboxSpec, WorkspaceMount


def test_only_referenced_backends_are_built():
    backends = build_sandbox_backends(SandboxingConfig())
    assert set(backends.backends) == {"subprocess", "namespace"}
    assert isinstance(backends.for_category("file_system"), SubprocessSandbox)
    assert isinstance(backends.for_category("terminal"), NamespaceSandbox)
    with pytest.raises(SandboxConfigInvalidError, match="unknown tool category"):
        resolve_backend_for_category(backends, "teleport")


def test_network_overrides_per_category():
    cfg = SandboxingConfig.model_validate({"docker": {"network_overrides": {"web": "bridge"}}})
    backends = build_sandbox_backends(cfg)
    assert backends.network_for("web") is NetworkPolicy.BRIDGE
    assert backends.network_for("terminal") is NetworkPolicy.NONE


def test_docker_stopped_fails_docker_categories_clearly_while_others_work(tmp_path, workspace):
    dead_socket = f"unix://{tmp_path}/no-engine.sock"
    cfg = SandboxingConfig.model_validate(
        {
            "overrides": {"terminal": "docker", "code_execution": "docker"},
            "docker": {"docker_host": dead_socket},
        }
    )
    backends = build_sandbox_backends(cfg)
    try:
        terminal = backends.for_category("terminal")
        assert isinstance(terminal, DockerSandbox)
        spec = SandboxSpec(argv=("echo", "hi"), workspace=WorkspaceMount(workspace))
        for _ in range(2):  # every call, not only the first
            with pytest.raises(SandboxUnavailableError) as caught:
                terminal.run(spec)
            assert "cannot reach the Docker engine" in caught.value.reason
            assert dead_socket in caught.value.reason
        report = terminal.probe()
        assert not report.ok and "Docker engine" in report.reason
        assert backends.for_category("file_system").run(spec).stdout == "hi\n"
        assert backends.for_category("web").run(spec).stdout == "hi\n"  # namespace
    finally:
        backends.close()


def test_a_namespace_category_without_bubblewrap_fails_instead_of_falling_back(workspace):
    cfg = SandboxingConfig.model_validate({"namespace": {"bwrap_path": "/nonexistent/bwrap"}})
    backends = build_sandbox_backends(cfg)
    spec = SandboxSpec(argv=("echo", "hi"), workspace=WorkspaceMount(workspace))
    result = backends.for_category("terminal").run(spec)
    assert result.exit_code != 0 and result.stdout == ""
    assert result.backend == "namespace"

"""The ``sandboxing`` config section: defaults, merging, refusals."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from common.config.sandbox import SandboxingConfig, parse_size


def test_defaults_put_every_external_program_on_namespace():
    cfg = SandboxingConfig()
    assert cfg.backend_for("file_system") == "subprocess"
    assert cfg.backend_for("version_control") == "namespace"
    assert cfg.backend_for("git") == "namespace"
    for category in ("terminal", "code_execution", "web", "database", "mcp", "memory"):
        assert cfg.backend_for(category) == "namespace"
    assert cfg.docker.lifecycle.strategy == "per-agent"
    assert cfg.docker.lifecycle.grace_period_seconds == 30
    assert cfg.docker.network == "none" and cfg.docker.mount_mode == "ro"


def test_seed_shaped_section_loads_and_merges_over_the_defaults():
    cfg = SandboxingConfig.model_validate(
        {
            "default_backend": "namespace",
            "overrides": {"file_system": "subprocess", "web": "docker", "terminal": "docker"},
            "subprocess": {"timeout_seconds": 30, "workspace_only": True, "restricted_path": True},
            "docker": {
                "image": "synthorg-sandbox:0.1.0",
                "network": "none",
                "network_overrides": {"web": "bridge"},
                "memory_limit": "512m",
                "cpu_limit": "1.0",
                "timeout_seconds": 120,
                "mount_mode": "ro",
                "auto_remove": True,
                "lifecycle": {"strategy": "per-task", "grace_period_seconds": 5},
            },
        }
    )
    assert cfg.backend_for("web") == "docker" and cfg.backend_for("terminal") == "docker"
    assert cfg.backend_for("database") == "namespace"  # default kept
    assert cfg.docker.memory_limit == 512 * 1024**2 and cfg.docker.cpu_limit == 1.0
    assert cfg.referenced_backends() == ("subprocess", "namespace", "docker")


@pytest.mark.parametrize(
    ("section", "words"),
    [
        ({"default_backend": "k8s"}, ["namespace", "docker"]),
        ({"default_backend": "subprocess"}, ["namespace", "docker"]),
        ({"overrides": {"code_execution": "subprocess"}}, ["code_execution", "isolating"]),
        ({"overrides": {"git": "subprocess"}}, ["git", "isolating", "namespace, docker"]),
        ({"overrides": {"terminal": "subprocess"}}, ["terminal", "external programs"]),
        ({"overrides": {"web": "chroot"}}, ["chroot", "allowed"]),
        ({"overrides": {"webb": "docker"}}, ["webb", "file_system"]),
        ({"docker": {"network_overrides": {"dtabase": "bridge"}}}, ["dtabase"]),
        ({"docker": {"lifecycle": {"strategy": "per-week"}}}, ["per-agent"]),
        ({"docker": {"memory_limit": "lots"}}, ["size"]),
        ({"docker": {"allowed_hosts": ["example.com:443"]}}, ["sidecar"]),
        ({"subprocess": {"workspace_only": False}}, ["workspace_only"]),
        ({"subprocess": {"timeout": 3}}, ["timeout", "Extra"]),
        ({"k8s": {}}, ["k8s"]),
    ],
)
def test_mistakes_are_refused_with_what_is_allowed(section, words):
    with pytest.raises(ValidationError) as caught:
        SandboxingConfig.model_validate(section)
    text = str(caught.value)
    for word in words:
        assert word in text


def test_file_system_may_move_to_an_isolating_backend():
    cfg = SandboxingConfig.model_validate(
        {"overrides": {"file_system": "namespace", "git": "docker"}}
    )
    assert cfg.backend_for("file_system") == "namespace"
    assert cfg.referenced_backends() == ("namespace", "docker")


def test_config_is_frozen():
    cfg = SandboxingConfig()
    with pytest.raises(ValidationError):
        cfg.default_backend = "docker"


@pytest.mark.parametrize(
    ("text", "size"), [("512m", 512 * 1024**2), ("1Gi", 1024**3), ("64MB", 64 * 1024**2), (10, 10)]
)
def test_sizes(text, size):
    assert parse_size(text) == size

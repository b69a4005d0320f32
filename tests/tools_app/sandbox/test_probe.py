"""Probes run each backend for real and say why one does not work."""

from __future__ import annotations

from common.config.sandbox import SandboxingConfig
from tests.tools_app.sandbox.conftest import require
from tools_app.sandbox.probe import format_reports, probe_backends


def test_probe_reports_every_backend_with_a_reason(docker_client):
    reports = {r.backend: r for r in probe_backends()}
    assert set(reports) == {"subprocess", "namespace", "docker"}
    for report in reports.values():
        require(report.ok, f"{report.backend} does not work here: {report.reason}")
        assert report.reason
    text = format_reports(list(reports.values()))
    assert "subprocess" in text and "ok" in text and "cgroup" in text


def test_probe_explains_an_unreachable_engine_and_a_missing_image(docker_client, tmp_path):
    cfg = SandboxingConfig.model_validate({"docker": {"docker_host": f"unix://{tmp_path}/x.sock"}})
    docker = {r.backend: r for r in probe_backends(cfg)}["docker"]
    assert not docker.ok and "cannot reach the Docker engine" in docker.reason
    cfg = SandboxingConfig.model_validate({"docker": {"image": "synthorg-sandbox:no-such"}})
    docker = {r.backend: r for r in probe_backends(cfg)}["docker"]
    assert not docker.ok and "build-image" in docker.reason

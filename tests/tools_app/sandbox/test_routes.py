"""Which backend each category uses and why: the probe command and /healthz say it."""

from __future__ import annotations

import io
import re

import httpx
import pytest
from django.core.management import call_command

from common.config.sandbox import SandboxingConfig
from common.testing import RunningProcess, wait_until
from tools_app.sandbox.routes import categories_of, category_routes, format_routes


def test_routes_name_every_category_its_backend_and_the_source() -> None:
    routes = {r.category: r for r in category_routes(SandboxingConfig())}
    assert routes["file_system"].backend == "subprocess"
    assert routes["file_system"].source == "default"
    assert "private root" in routes["file_system"].why
    assert routes["version_control"].backend == "namespace"
    assert routes["mcp"].backend == "namespace"
    assert routes["mcp"].source == "sandboxing.default_backend"
    assert {r.backend for c, r in routes.items() if c != "file_system"} == {"namespace"}
    moved = SandboxingConfig.model_validate({"overrides": {"terminal": "docker"}})
    terminal = {r.category: r for r in category_routes(moved)}["terminal"]
    assert (terminal.backend, terminal.source) == ("docker", "sandboxing.overrides")
    assert categories_of(moved, "docker") == ["terminal"]
    text = format_routes(category_routes(moved))
    assert re.search(r"^file_system +-> subprocess \(default\): ", text, re.MULTILINE)
    assert re.search(r"^terminal +-> docker \(sandboxing.overrides\): ", text, re.MULTILINE)


@pytest.mark.django_db
def test_the_probe_command_prints_each_categorys_backend(docker_client) -> None:
    out = io.StringIO()
    call_command("synthorg_sandbox", "probe", stdout=out)
    text = out.getvalue()
    assert "subprocess" in text and "private_root" in text
    assert re.search(r"^file_system +-> subprocess \(default\)", text, re.MULTILINE)
    assert re.search(r"^version_control +-> namespace \(default\)", text, re.MULTILINE)


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_healthz_says_which_categories_each_backend_serves(
    celery_worker_process: RunningProcess, daphne_server: str
) -> None:
    def parts() -> dict:
        return httpx.get(daphne_server + "/healthz", timeout=10).json()["parts"]

    wait_until(
        lambda: "serves:" in parts().get("sandbox.subprocess", {}).get("detail", ""),
        timeout=120,
        what="the worker's sandbox probes",
    )
    found = parts()
    assert found["sandbox.subprocess"]["ok"] is True
    assert "serves: file_system (" in found["sandbox.subprocess"]["detail"]
    assert "private root" in found["sandbox.subprocess"]["detail"]
    namespace = found["sandbox.namespace"]["detail"]
    assert "version_control" in namespace and "terminal" in namespace
    assert "file_system" not in namespace

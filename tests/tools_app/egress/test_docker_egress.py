"""A docker sandbox (network mode none) reaches out only through the call's egress proxy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools_app.egress.servers import ByteServer
from tests.tools_app.egress.test_namespace_egress import (
    PYTHON_URLLIB,
    RAW_BYPASS,
    allow,
    run_with_egress,
)
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tests.tools_app.sandbox.backends.docker.test_backend import SETTINGS
from tools_app.egress import EgressOutcome
from tools_app.sandbox.backends.docker.backend import DockerSandbox
from tools_app.sandbox.protocol import Owner


@pytest.fixture
def docker_backend(docker_client: object) -> Iterator[DockerSandbox]:
    backend = DockerSandbox(SETTINGS)
    yield backend
    backend.close()


def test_urllib_in_docker_reaches_the_allowlisted_server_only(
    docker_backend: DockerSandbox, workspace: Path
) -> None:
    with LoopbackHttpServer() as web, LoopbackHttpServer("127.0.0.2") as hidden:
        web.route("/data", Reply(body=b"from the host"))
        result, records = run_with_egress(
            workspace,
            allow(f"127.0.0.1:{web.port}"),
            ("python3", "-c", PYTHON_URLLIB, web.url("/data"), hidden.url("/")),
            backend=docker_backend,
            owner=Owner(agent_id="egress-docker-agent"),
        )
    assert f"GOT {web.url('/data')} from the host" in result.stdout, result
    assert f"REFUSED {hidden.url('/')}" in result.stdout
    assert web.count("/data") == 1 and hidden.count() == 0
    # Recorded as each connection ends, which need not be the order they began in.
    outcomes = {r.host: r.outcome for r in records}
    assert outcomes == {"127.0.0.1": EgressOutcome.CLOSED, "127.0.0.2": EgressOutcome.REFUSED}


def test_raw_sockets_in_docker_reach_nothing_but_the_proxy(
    docker_backend: DockerSandbox, workspace: Path
) -> None:
    with ByteServer(expect=1000, answer=2500) as server:
        result, records = run_with_egress(
            workspace,
            allow(f"127.0.0.1:{server.port}"),
            ("python3", "-c", RAW_BYPASS, str(server.port)),
            backend=docker_backend,
            owner=Owner(agent_id="egress-docker-agent"),
        )
    assert "DIRECT BLOCKED" in result.stdout, result
    assert "REACHED" not in result.stdout
    assert "RECEIVED 2500" in result.stdout
    (record,) = records
    assert (record.bytes_up, record.bytes_down) == (1000, 2500)


def test_the_docker_probe_says_the_proxy_runs(docker_backend: DockerSandbox) -> None:
    from tools_app.sandbox.backends.docker.probe import probe_docker

    report = probe_docker(docker_backend)
    assert report.ok, report.reason
    assert str(report.details["egress_proxy"]).startswith("egress proxy runs"), report.details

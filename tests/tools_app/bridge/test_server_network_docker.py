"""A docker-sandboxed stdio server's ``network``: still ``--network none``, its proxy the
only way out (real engine, the sandbox image, a standard-library MCP server).

The allowlisted loopback server is reached beside a refused 127.0.0.2; the same server
without ``network`` reaches nothing (control).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit_app.models import AuditEvent
from tests.tools_app.bridge.bridged import SERVERS, bridged_servers, call, server_name
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tests.tools_app.sandbox.conftest import docker_client, make_workspace
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
__all__ = ["docker_client"]


@pytest.fixture
def workspace() -> Iterator[Path]:
    """The agent's workspace, holding the server's program (the image has no SDK)."""
    path = make_workspace(writable=True)
    program = path / "stdlib_net.py"
    shutil.copyfile(SERVERS / "stdlib_net.py", program)
    program.chmod(0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_docker_server_reaches_its_allowlist_through_the_proxy_only(
    settings: Any, tmp_path: Path, workspace: Path, docker_client: object
) -> None:
    name = f"dock-agent-{uuid.uuid4().hex[:8]}"
    agent = Agent.objects.create(name=name, access_level="standard", workspace=str(workspace))
    with LoopbackHttpServer() as web, LoopbackHttpServer("127.0.0.2") as hidden:
        web.route("/ok", Reply(body=b"docker body"))
        networked, closed = server_name("dnet"), server_name("dnonet")
        entry: dict[str, Any] = {
            "transport": "stdio", "sandbox": "docker", "workspace": "agent",
            "command": ["python3", "/workspace/stdlib_net.py"],
        }  # fmt: skip
        servers = [
            {**entry, "name": networked, "network": [f"127.0.0.1:{web.port}"]},
            {**entry, "name": closed},
        ]
        with bridged_servers(settings, tmp_path, servers, listing_workspace=workspace):

            def fetch(server: str, url: str) -> str:
                outcome, settled, _ = call(
                    f"{server}__fetch", {"url": url}, agent=agent, workspace=workspace
                )
                assert not outcome.is_error, outcome
                return settled.content

            assert fetch(networked, web.url("/ok")) == "GOT 200 docker body"
            refused = fetch(networked, hidden.url("/"))
            assert refused.startswith("REFUSED 403"), refused
            unproxied = fetch(closed, web.url("/ok"))
            assert unproxied.startswith("FAILED"), unproxied
        assert web.count("/ok") == 1 and hidden.count() == 0
    rows = AuditEvent.objects.filter(kind="egress.connection", data__server=networked)
    outcomes = sorted((r.outcome, r.data["host"]) for r in rows)
    assert outcomes == [("closed", "127.0.0.1"), ("refused", "127.0.0.2")], outcomes
    reached = rows.get(outcome="closed")
    assert reached.data["bytes_down"] > len(b"docker body") and reached.data["bytes_up"] > 0

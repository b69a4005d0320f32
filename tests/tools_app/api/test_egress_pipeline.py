"""shell_command and code_runner reach the network only through the egress proxy.

Through the public API and a real worker: an agent granted ``allowlist_only``
with the test's own loopback server reaches it with curl (shell_command) and
Python's urllib (code_runner), while another loopback port and 127.0.0.2 are
refused; every connection leaves one audit row with its byte counts. An agent
whose network is ``none`` reaches nothing and its calls leave no connection rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from audit_app.models import AuditEvent
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.egress.servers import ByteServer
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tools_app.services.egress_audit import CONNECTION_KIND
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

URLLIB = """
import sys, urllib.request
for url in sys.argv[1:] or [__URLS__]:
    try:
        with urllib.request.urlopen(url, timeout=20) as answer:
            print("GOT", url, answer.read().decode())
    except OSError as exc:
        print("REFUSED", url, exc)
"""

EXACT_BYTES = """
import socket
tunnel = socket.create_connection(("127.0.0.1", 3128), timeout=10)
tunnel.sendall(b"CONNECT 127.0.0.1:__PORT__ HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
head = b""
while not head.endswith(b"\\r\\n\\r\\n"):
    head += tunnel.recv(1)
tunnel.sendall(b"u" * 777)
got = 0
while chunk := tunnel.recv(65536):
    got += len(chunk)
print("RECEIVED", got)
"""


def done(client: AgentClient, tool: str, arguments: dict[str, Any]) -> Any:
    response = client.call(tool, arguments, wait=60, idempotency_key=uuid.uuid4().hex)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["status"] not in ("pending_approval", "queued", "running"), answer
    return answer


def agent_with_network(make: Callable[..., AgentClient], **network: Any) -> AgentClient:
    client = make("elevated", autonomy="full")
    AgentPermissions.objects.create(
        agent=client.agent,
        sub_constraints={"code_execution": "namespace", "terminal": "full", **network},
    )
    return client


def rows(invocation_id: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=CONNECTION_KIND, invocation_id=invocation_id))


def test_shell_and_code_reach_the_allowlisted_server_only_and_each_connection_is_audited(
    make_agent: Callable[..., AgentClient], celery_worker_process: Any
) -> None:
    with (
        LoopbackHttpServer() as web,
        LoopbackHttpServer() as other,
        LoopbackHttpServer("127.0.0.2") as hidden,
        ByteServer(expect=777, answer=4321) as counted,
    ):
        web.route("/ok", Reply(body=b"granted"))
        client = agent_with_network(
            make_agent,
            network="allowlist_only",
            allowed_hosts=[f"127.0.0.1:{web.port}", f"127.0.0.1:{counted.port}"],
        )
        curl = done(client, "shell_command", {"argv": ["curl", "-sS", "-f", web.url("/ok")]})
        assert curl["status"] == "succeeded", curl
        assert "granted" in curl["result"]["content"]
        refused = done(client, "shell_command", {"argv": ["curl", "-sS", "-f", other.url("/")]})
        assert refused["status"] == "failed" and "403" in str(refused), refused

        code = URLLIB.replace("__URLS__", f"{web.url('/ok')!r}, {hidden.url('/')!r}")
        ran = done(client, "code_runner", {"language": "python", "code": code})
        assert ran["status"] == "succeeded", ran
        assert f"GOT {web.url('/ok')} granted" in ran["result"]["content"]
        assert f"REFUSED {hidden.url('/')}" in ran["result"]["content"]

        exact = EXACT_BYTES.replace("__PORT__", str(counted.port))
        measured = done(client, "code_runner", {"language": "python", "code": exact})
        assert "RECEIVED 4321" in measured["result"]["content"], measured
    assert web.count("/ok") == 2 and other.count() == hidden.count() == 0

    (curl_row,) = rows(curl["id"])
    assert curl_row.outcome == "closed" and curl_row.data["port"] == web.port
    assert curl_row.data["bytes_down"] > len(b"granted") and curl_row.data["bytes_up"] > 0
    (refused_row,) = rows(refused["id"])
    assert refused_row.outcome == "refused" and "not on the allowlist" in refused_row.reason
    ran_rows = {row.data["host"]: row for row in rows(ran["id"])}
    assert ran_rows["127.0.0.1"].outcome == "closed"
    assert ran_rows["127.0.0.2"].outcome == "refused"
    (measured_row,) = rows(measured["id"])
    assert (measured_row.data["bytes_up"], measured_row.data["bytes_down"]) == (777, 4321)
    assert measured_row.agent_name == client.agent.name and measured_row.tool == "code_runner"


def test_an_agent_without_network_reaches_nothing_and_leaves_no_connection_rows(
    make_agent: Callable[..., AgentClient], celery_worker_process: Any
) -> None:
    with LoopbackHttpServer() as web:
        web.route("/ok", Reply(body=b"granted"))
        code = URLLIB.replace("__URLS__", repr(web.url("/ok")))
        isolated = agent_with_network(
            make_agent, network="none", allowed_hosts=[f"127.0.0.1:{web.port}"]
        )
        cut_off = done(isolated, "code_runner", {"language": "python", "code": code})
        granted = agent_with_network(
            make_agent, network="allowlist_only", allowed_hosts=[f"127.0.0.1:{web.port}"]
        )
        control = done(granted, "code_runner", {"language": "python", "code": code})
    assert f"REFUSED {web.url('/ok')}" in cut_off["result"]["content"], cut_off
    assert rows(cut_off["id"]) == []
    assert f"GOT {web.url('/ok')} granted" in control["result"]["content"], control
    assert web.count("/ok") == 1

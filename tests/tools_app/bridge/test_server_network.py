"""A stdio server's ``network`` allowlist: its own egress proxy is its only way out.

Real servers (official SDK) in the real namespace sandbox, real loopback servers of the
test's own, the real proxy. Each refusal stands beside the allowed fetch from the same
warm server: the allowlisted ``127.0.0.1:<port>`` is reached; another loopback port,
127.0.0.2, [::1], a name resolving to loopback and a raw connect are not. A server
without ``network`` reaches nothing, not even the allowlisted port (control).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audit_app.models import AuditEvent
from tests.tools_app.bridge.bridged import NET_SERVER, bridged_servers, call, server_name
from tests.tools_app.egress.servers import ByteServer
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tools_app.bridge.pool import bridge_pool
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_the_allowlisted_port_is_reached_and_nothing_else(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    with (
        LoopbackHttpServer() as web,
        LoopbackHttpServer() as other,
        LoopbackHttpServer("127.0.0.2") as hidden,
        LoopbackHttpServer("::1") as v6,
    ):
        web.route("/ok", Reply(body=b"allowed body"))
        name, closed = server_name("net"), server_name("nonet")
        entry: dict[str, Any] = {"transport": "stdio", "command": NET_SERVER}
        servers = [
            # localhost is allowlisted by name: it resolves to loopback, so it stays refused.
            {**entry, "name": name, "network": [f"127.0.0.1:{web.port}", f"localhost:{web.port}"]},
            {**entry, "name": closed},
        ]
        with bridged_servers(settings, tmp_path, servers):

            def fetch(url: str, server: str = name) -> tuple[str, str]:
                outcome, settled, invocation = call(
                    f"{server}__fetch", {"url": url}, agent=agent, workspace=workspace
                )
                assert not outcome.is_error, outcome
                return settled.content, invocation

            allowed, allowed_call = fetch(web.url("/ok"))
            assert allowed == "GOT 200 allowed body", allowed
            refused = {
                "other port": fetch(other.url("/"))[0],
                "127.0.0.2": fetch(hidden.url("/"))[0],
                "[::1]": fetch(v6.url("/"))[0],
                "localhost": fetch(f"http://localhost:{web.port}/ok")[0],
            }
            for what, answer in refused.items():
                assert answer.startswith("REFUSED 403"), (what, answer)
            bypass = call(
                f"{name}__connect", {"host": "127.0.0.1", "port": web.port},
                agent=agent, workspace=workspace,
            )[1].content  # fmt: skip
            assert bypass.startswith("DIRECT BLOCKED"), bypass
            # Control: the same tool of a server without `network` reaches nothing at all.
            unproxied = fetch(web.url("/ok"), server=closed)[0]
            assert unproxied.startswith("FAILED"), unproxied
            warm = {w.server.name: w for w in bridge_pool().servers.values()}
            assert warm[closed].egress is None, "no network, no proxy"
            proxy_dir = warm[name].egress.directory  # type: ignore[union-attr]
            assert (proxy_dir / "proxy.sock").exists()
        assert not proxy_dir.exists(), "the proxy stops with its server"
        assert web.count("/ok") == 1
        assert other.count() == hidden.count() == v6.count() == 0
    rows = list(AuditEvent.objects.filter(kind="egress.connection", data__server=name))
    reached = [r for r in rows if r.outcome == "closed"]
    assert len(reached) == 1, [(r.outcome, r.reason) for r in rows]
    row = reached[0]
    assert row.data["port"] == web.port and row.data["address"] == "127.0.0.1"
    assert row.data["bytes_up"] > 0 and row.data["bytes_down"] > len(b"allowed body")
    assert row.agent_name == agent.name and row.tool == f"{name}__fetch"
    # With the call that made it (or, had it outlived the call, when the server stopped).
    assert str(row.invocation_id) == allowed_call or row.invocation_id is None
    refusals = {(r.data["host"], r.data["port"]) for r in rows if r.outcome == "refused"}
    assert refusals == {
        ("127.0.0.1", other.port),
        ("127.0.0.2", hidden.port),
        ("::1", v6.port),
        ("localhost", web.port),
    }, refusals
    assert not AuditEvent.objects.filter(kind="egress.connection", data__server=closed).exists()


def test_a_connection_outliving_its_call_is_audited_when_the_server_stops(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    settings.SYNTHORG_BRIDGE_EGRESS_SETTLE_SECONDS = 0  # the call's drain waits for nothing
    with ByteServer(stall=700) as stalled:
        name = server_name("hold")
        entry = {"transport": "stdio", "command": NET_SERVER, "name": name}
        servers = [{**entry, "network": [f"127.0.0.1:{stalled.port}"]}]
        with bridged_servers(settings, tmp_path, servers):
            outcome, _, invocation = call(
                f"{name}__hold", {"host": "127.0.0.1", "port": stalled.port, "expect": 700},
                agent=agent, workspace=workspace,
            )  # fmt: skip
            assert outcome.content == "HOLDING 200 after 700 bytes", outcome
            # Still open when the call ended: nothing written with the call.
            assert not AuditEvent.objects.filter(kind="egress.connection", data__server=name)
        assert stalled.accepted == 1
    (row,) = AuditEvent.objects.filter(kind="egress.connection", data__server=name)
    assert row.outcome == "cut" and row.invocation_id is None, (row.outcome, row.reason)
    assert row.data["bytes_down"] == 700 and row.data["port"] == stalled.port
    assert row.actor_name == f"mcp server {name}" and invocation

"""A stdio server's ``secrets`` are sealed: the server holds placeholders, its egress
proxy adds the values to its requests to the grant's hosts, and the agent sees neither.

Real servers (official SDK) in the real namespace sandbox, a loopback HTTP server of the
test's own that answers "authorized" only to the real value (the positive control).
The server's ``env`` tool echoes its variable plain and base64-encoded beside its
SHA-256: the variable holds the reference, never the value. A server naming a secret
that is not granted (or does not exist) is refused with the same words either way, and
one granted without hosts is refused until an admin seals it; neither is started.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import secrets
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from audit_app.models import AuditEvent
from audit_app.record import Actor
from common.config.mcp import McpServer
from common.testing import in_fresh_thread, wait_until
from secrets_app.services import secret_grant, secret_set
from tests.tools_app.bridge.bridged import NET_SERVER, bridged_servers, call, server_name
from tests.tools_app.net.servers import LoopbackHttpServer, RecordedRequest, Reply
from tools_app.bridge.discovery import discover_server
from tools_app.bridge.pool import bridge_pool
from tools_app.builtin.base import ToolRefusedError
from trust_app.models import Agent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
ADMIN = Actor.system("test admin")


def _agent(prefix: str) -> Agent:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    return Agent.objects.create(name=name, access_level="standard", workspace=f"/tmp/{name}")


def _spellings(value: str) -> list[str]:
    raw = value.encode()
    return [value, base64.b64encode(raw).decode().rstrip("="), raw.hex()]


def _leaks(value: str, text: str) -> list[str]:
    return [s for s in _spellings(value) if s in text]


def _echo(server: str, agent: Agent, workspace: Path) -> tuple[str, str, str]:
    """The server's echo of SERVICE_TOKEN: raw outcome, the agent's view (text and
    structured result, which the SDK also sends), invocation id."""
    outcome, settled, invocation = call(
        f"{server}__env", {"name": "SERVICE_TOKEN"}, agent=agent, workspace=workspace
    )
    assert not outcome.is_error, outcome
    assert outcome.structured is not None and settled.structured is not None
    structured = json.dumps([outcome.structured, settled.structured])
    return outcome.content + structured, settled.content + structured, invocation


def _discover(server: McpServer) -> None:
    """Discovery in a thread of its own, whose database connection goes with it."""
    try:
        discover_server(server)
    finally:
        connection.close()


def _digest(value: str) -> str:
    return "sha256=" + hashlib.sha256(value.encode()).hexdigest()


def _authorizing(current: dict[str, str]) -> Any:
    def answer(request: RecordedRequest) -> Reply:
        if request.header_values("Authorization") == [f"Bearer {current['value']}"]:
            return Reply(200, body=b"authorized")
        return Reply(401, body=b"not authorized")

    return answer


def test_a_sealed_secret_reaches_the_granted_host_and_never_the_server_or_the_agent(
    settings: Any, tmp_path: Path, workspace: Path
) -> None:
    agent = _agent("sec-agent")
    secret = f"SVC_{uuid.uuid4().hex[:8]}"
    value = "svc-" + secrets.token_urlsafe(24)
    current = {"value": value}
    name, plain = server_name("sec"), server_name("plain")
    secret_set(name=secret, value=value, actor=ADMIN)
    with LoopbackHttpServer() as api, LoopbackHttpServer() as other:
        api.route("/api", _authorizing(current))
        other.route("/api", _authorizing(current))
        secret_grant(
            name=secret, agent=None, server=name, hosts=[f"127.0.0.1:{api.port}"], actor=ADMIN
        )
        network = [f"127.0.0.1:{api.port}", f"127.0.0.1:{other.port}"]
        entry: dict[str, Any] = {"transport": "stdio", "command": NET_SERVER, "network": network}
        servers = [
            {**entry, "name": name, "secrets": {"SERVICE_TOKEN": secret}},
            {**entry, "name": plain},
        ]
        with bridged_servers(settings, tmp_path, servers):
            raw, shown, invocation = _echo(name, agent, workspace)
            # The server's own environment holds the reference, not the value.
            assert f"SERVICE_TOKEN=${{secret:{secret}}}" in raw, raw
            assert _digest(value) not in raw and not _leaks(value, raw + shown), raw
            # Positive control: its request to the granted host carries the value.
            used = call(
                f"{name}__fetch_with", {"url": api.url("/api"), "variable": "SERVICE_TOKEN"},
                agent=agent, workspace=workspace,
            )[0]  # fmt: skip
            assert "GOT 200 authorized" in used.content, used.content
            # A host the grant does not name gets the placeholder only.
            elsewhere = call(
                f"{name}__fetch_with", {"url": other.url("/api"), "variable": "SERVICE_TOKEN"},
                agent=agent, workspace=workspace,
            )[0]  # fmt: skip
            assert "REFUSED 401" in elsewhere.content, elsewhere.content
            assert other.requests[-1].header_values("Authorization") == [
                f"Bearer ${{secret:{secret}}}"
            ]
            # Control: a server without `secrets` has no such variable.
            assert _echo(plain, agent, workspace)[0].startswith("SERVICE_TOKEN is not set")
            # A rotated secret restarts the warm server; its proxy adds the new value.
            rotated = "svc-" + secrets.token_urlsafe(24)
            secret_set(name=secret, value=rotated, actor=ADMIN)
            current["value"] = rotated
            again = call(
                f"{name}__fetch_with", {"url": api.url("/api"), "variable": "SERVICE_TOKEN"},
                agent=agent, workspace=workspace,
            )[0]  # fmt: skip
            assert "GOT 200 authorized" in again.content, again.content
        assert api.requests[0].header_values("Authorization") == [f"Bearer {value}"]
    used_rows = AuditEvent.objects.filter(kind="secret.used", data__server=name)
    assert used_rows.filter(invocation_id=invocation).exists(), "each call's use is audited"
    sealed = AuditEvent.objects.filter(kind="egress.connection", data__secrets=[secret])
    assert sealed.exists(), "each connection a value went out on is in the record"
    trail = json.dumps(
        [[e.reason, e.data] for e in AuditEvent.objects.all()], ensure_ascii=False
    )  # fmt: skip
    assert not _leaks(value, trail) and not _leaks(rotated, trail)


def test_a_server_granted_a_secret_without_hosts_is_refused_until_sealed(
    settings: Any, tmp_path: Path, workspace: Path
) -> None:
    agent = _agent("sec-unsealed")
    secret = f"SVC_{uuid.uuid4().hex[:8]}"
    value = "svc-" + secrets.token_urlsafe(24)
    name = server_name("unsealed")
    secret_set(name=secret, value=value, actor=ADMIN)
    secret_grant(name=secret, agent=None, server=name, actor=ADMIN)
    servers = [{"transport": "stdio", "command": NET_SERVER, "name": name,
                "secrets": {"SERVICE_TOKEN": secret}}]  # fmt: skip
    with bridged_servers(settings, tmp_path, servers):
        with pytest.raises(ToolRefusedError) as refused:
            _echo(name, agent, workspace)
        assert "granted to it without hosts" in refused.value.reason, refused.value.reason
        assert (name, None) not in bridge_pool().servers, "never started with the value"
        # Control: sealed for a host, the same server starts (holding the placeholder).
        secret_grant(name=secret, agent=None, server=name, hosts=["api.example.com"], actor=ADMIN)
        raw = _echo(name, agent, workspace)[0]
        assert f"SERVICE_TOKEN=${{secret:{secret}}}" in raw and not _leaks(value, raw)


def test_a_rotation_replaces_the_server_without_cutting_a_call_in_flight(
    settings: Any, tmp_path: Path, workspace: Path
) -> None:
    agent = _agent("sec-rotate")
    secret = f"SVC_{uuid.uuid4().hex[:8]}"
    old, new = ("svc-" + secrets.token_urlsafe(24) for _ in range(2))
    name = server_name("rot")
    secret_set(name=secret, value=old, actor=ADMIN)
    secret_grant(name=secret, agent=None, server=name, hosts=["api.example.com"], actor=ADMIN)
    servers = [{"transport": "stdio", "command": NET_SERVER, "name": name,
                "secrets": {"SERVICE_TOKEN": secret}}]  # fmt: skip
    with bridged_servers(settings, tmp_path, servers):
        # A call that is still running when the secret rotates.
        slow: dict[str, Any] = {}

        def run_slow() -> None:
            try:
                slow["outcome"] = call(
                    f"{name}__env_later", {"name": "SERVICE_TOKEN", "seconds": 4},
                    agent=agent, workspace=workspace,
                )[0]  # fmt: skip
            finally:
                connection.close()  # this thread's own database connection

        thread = threading.Thread(target=run_slow)
        thread.start()
        pool = bridge_pool()
        wait_until(
            lambda: (w := pool.servers.get((name, None))) is not None and w.busy > 0,
            timeout=60, what="the slow call to be in flight", poll=0.05,
        )  # fmt: skip
        first = pool.servers[(name, None)]
        secret_set(name=secret, value=new, actor=ADMIN)
        # The next call gets a server started again, its proxy holding the new value...
        assert f"${{secret:{secret}}}" in _echo(name, agent, workspace)[0]
        assert pool.servers[(name, None)] is not first
        # ...and the call in flight ends normally on the server it started on.
        thread.join(60)
        outcome = slow["outcome"]
        assert not outcome.is_error, outcome
        assert f"SERVICE_TOKEN=${{secret:{secret}}}" in outcome.content, outcome.content
        assert not _leaks(old, outcome.content) and not _leaks(new, outcome.content)
        # The replaced server stopped once its call ended.
        wait_until(lambda: first.task is not None and first.task.done(), timeout=30,
                   what="the replaced server to stop")  # fmt: skip


def test_a_server_whose_secret_is_not_granted_is_refused_without_confirming_the_name(
    settings: Any, tmp_path: Path, workspace: Path
) -> None:
    granted, other = _agent("sec-granted"), _agent("sec-other")
    secret = f"SVC_{uuid.uuid4().hex[:8]}"
    value = "svc-" + secrets.token_urlsafe(24)
    name, missing = server_name("peragent"), server_name("missing")
    secret_set(name=secret, value=value, actor=ADMIN)
    secret_grant(name=secret, agent=granted, server=name, hosts=["api.example.com"], actor=ADMIN)
    entry: dict[str, Any] = {"transport": "stdio", "command": NET_SERVER, "state": "agent"}
    servers = [
        {**entry, "name": name, "secrets": {"SERVICE_TOKEN": secret}},
        {**entry, "name": missing, "secrets": {"SERVICE_TOKEN": "NO_SUCH_SECRET_ANYWHERE"}},
    ]
    with bridged_servers(settings, tmp_path, servers):
        # Positive control: the agent holding the grant gets its server (sealed).
        assert f"SERVICE_TOKEN=${{secret:{secret}}}" in _echo(name, granted, workspace)[0]
        reasons = []
        for server, who in ((name, other), (missing, granted)):
            with pytest.raises(ToolRefusedError) as refused:
                _echo(server, who, workspace)
            reason = refused.value.reason
            assert secret not in reason and "NO_SUCH_SECRET" not in reason, reason
            assert "Nothing was started or sent without it" in reason
            assert (server, str(who.id)) not in bridge_pool().servers, "never started without"
            reasons.append(reason.replace(server, "<server>"))
        assert reasons[0] == reasons[1], "an existing and an unknown name read the same"
        # A shared server whose secret is not granted is listed with placeholders only
        # (no value exists anywhere in a listing), and its calls are refused in words
        # naming no secret.
        shared = McpServer.model_validate({**servers[1], "state": "worker", "name": missing})
        in_fresh_thread(functools.partial(_discover, shared))
        with pytest.raises(ToolRefusedError) as held:
            _echo(missing, granted, workspace)
        assert "Nothing was started or sent without it" in held.value.reason, held.value.reason
        assert "NO_SUCH_SECRET" not in held.value.reason
    rows = AuditEvent.objects.filter(kind="mcp.call", tool=f"{name}__env", agent_name=other.name)
    assert [r.outcome for r in rows] == ["LIMIT_EXCEEDED"]

"""code_runner and shell_command with the egress proxy: the grant and the tool's config decide.

Real namespace sandbox, real proxy (``LocalEgressGateway``), the test's own loopback
server; each refusal beside the same call that is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.fs_fixtures import make_context
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tests.tools_app.sandbox.backends.test_namespace import namespace_backend
from tools_app.builtin.base import ToolContext, ToolFailedError
from tools_app.builtin.code import tools as code
from tools_app.builtin.terminal import tools as terminal
from tools_app.egress import ConnectionRecord, LocalEgressGateway

FETCH = """
import urllib.request
try:
    print("GOT", urllib.request.urlopen(URL, timeout=20).read().decode())
except OSError as exc:
    print("REFUSED", exc)
"""


def _context(
    workspace: Path, seen: list[ConnectionRecord], *, settings: Mapping[str, Any], **sub: Any
) -> ToolContext:
    base = make_context(workspace, namespace_backend(), settings=settings, **sub)
    gateway = LocalEgressGateway(
        agent_name="tester", on_records=lambda records, _n: seen.extend(records)
    )
    return ToolContext(**{**{f: getattr(base, f) for f in base.__slots__}, "egress": gateway})


def _snippet(url: str) -> dict[str, str]:
    return {"language": "python", "code": f"URL = {url!r}\n{FETCH}"}


def test_code_runner_follows_the_tool_allow_list_within_the_agent_grant(
    workspace: Path,
) -> None:
    with LoopbackHttpServer() as allowed, LoopbackHttpServer() as other:
        allowed.route("/", Reply(body=b"fine"))
        other.route("/", Reply(body=b"never"))
        grant = {
            "network": "allowlist_only",
            "allowed_hosts": [f"127.0.0.1:{allowed.port}", f"127.0.0.1:{other.port}"],
            "code_execution": "namespace",
        }
        seen: list[ConnectionRecord] = []
        narrowed = _context(
            workspace, seen, settings={"allowed_hosts": [f"127.0.0.1:{allowed.port}"]}, **grant
        )
        ok = code.code_runner.run(narrowed, _snippet(allowed.url("/")))
        refused = code.code_runner.run(narrowed, _snippet(other.url("/")))
        wide = _context(workspace, seen, settings={}, **grant)
        control = code.code_runner.run(wide, _snippet(other.url("/")))
    assert "GOT fine" in ok.content, ok
    assert "REFUSED" in refused.content and other.count() == 1, refused
    assert "GOT never" in control.content, control
    assert [r.outcome.value for r in seen] == ["closed", "refused", "closed"]


def test_shell_command_without_a_network_grant_gets_no_proxy(workspace: Path) -> None:
    with LoopbackHttpServer() as web:
        web.route("/", Reply(body=b"reached"))
        argv = ["curl", "-sS", "--max-time", "10", web.url("/")]
        settings = {"allowed_commands": ["curl"]}
        seen: list[ConnectionRecord] = []
        none = _context(workspace, seen, settings=settings, network="none", terminal="full")
        cut_off = terminal.shell_command.run(none, {"argv": argv})
        allowed = [f"127.0.0.1:{web.port}"]
        granted = _context(
            workspace,
            seen,
            settings=settings,
            network="allowlist_only",
            allowed_hosts=allowed,
            terminal="full",
        )
        reached = terminal.shell_command.run(granted, {"argv": argv})
    assert "reached" not in cut_off.content and cut_off.is_error, cut_off
    assert "reached" in reached.content, reached
    assert web.count() == 1 and len(seen) == 1


def test_a_granted_call_on_a_worker_without_a_proxy_fails_with_the_reason(
    workspace: Path,
) -> None:
    context = make_context(
        workspace, namespace_backend(), network="open", code_execution="namespace"
    )
    with pytest.raises(ToolFailedError, match="no egress proxy"):
        code.code_runner.run(context, _snippet("http://127.0.0.1:9/"))

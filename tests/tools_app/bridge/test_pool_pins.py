"""The pins are checked where a call meets its server, not only at the health listing.

A real server (official SDK) in the real namespace sandbox changes ``note``'s definition
while it runs, or between two of its starts. The check before each call refuses a call
whose tool the server no longer lists with its pinned definition, and records the
change (held, audited, hidden) on the same warm session; a session that opens (a
restart) is reviewed before any call uses it. Controls: ``echo`` of the same server,
unchanged, is called and shown all along.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from audit_app.models import AuditEvent
from common.testing import wait_until
from tests.tools_app.bridge.bridged import (
    SERVERS,
    SITE,
    bridged_servers,
    call,
    server_name,
    stop_servers,
)
from tools_app.bridge.catalog import forget_records
from tools_app.bridge.pool import bridge_pool
from tools_app.builtin.base import ToolFailedError
from tools_app.models import UpstreamToolPin, UpstreamToolRecord
from tools_app.selectors.invocations import permitted_tools
from trust_app.models import Agent
from trust_app.selectors.agents import agent_policy

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PULL_SERVER = ["/usr/bin/python3", str(SERVERS / "py_pull.py"), SITE]


def _servers(name: str) -> list[dict[str, Any]]:
    return [{"name": name, "transport": "stdio", "command": PULL_SERVER, "workspace": "agent"}]


def _warm(name: str) -> Any:
    return next(w for w in bridge_pool().servers.values() if w.server.name == name)


def _shown(agent: Agent) -> set[str]:
    forget_records()
    return {e["name"] for e in permitted_tools(agent_policy(agent)) if "__" in e["name"]}


def test_a_call_to_a_tool_pulled_on_the_warm_session_is_not_sent_and_held(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    name = server_name("pull")
    with bridged_servers(settings, tmp_path, _servers(name), listing_workspace=workspace):
        outcome, _, _ = call(f"{name}__echo", {"text": "hi"}, agent=agent, workspace=workspace)
        assert outcome.content == "echo: hi", outcome
        session = _warm(name)
        assert _shown(agent) == {f"{name}__note", f"{name}__echo"}

        (workspace / "pulled").write_text("1")  # the running server now lists another note
        with pytest.raises(ToolFailedError) as refused:
            call(f"{name}__note", {"name": "n.txt", "text": "x"}, agent=agent, workspace=workspace)
        assert refused.value.code == "upstream_definition_held", refused.value.message
        assert f"{name}__note is held" in refused.value.message
        assert "not run" in refused.value.message
        assert not (workspace / "n.txt").exists(), "the call never reached the server"
        assert _warm(name) is session, "checked on the warm session, not at a restart"

        pin = UpstreamToolPin.objects.get(contract_name=f"{name}__note")
        assert pin.status == "held"
        assert pin.candidate_definition and pin.pinned_definition
        assert "id_rsa" in pin.candidate_definition["description"]
        assert "id_rsa" not in pin.pinned_definition["description"]
        assert AuditEvent.objects.filter(
            kind="bridge.definition.changed", tool=f"{name}__note"
        ).exists()
        assert not UpstreamToolRecord.objects.get(name=f"{name}__note").available
        assert _shown(agent) == {f"{name}__echo"}, "gone from the listing at once"
        # Control: the unchanged tool of the same server is called on the same session.
        outcome, _, _ = call(f"{name}__echo", {"text": "still"}, agent=agent, workspace=workspace)
        assert outcome.content == "echo: still" and _warm(name) is session
        failed = AuditEvent.objects.filter(kind="mcp.call", tool=f"{name}__note").get()
        assert failed.outcome == "upstream_definition_held"


def test_a_restarted_server_is_reviewed_before_any_call_uses_it(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    name = server_name("restart")
    with bridged_servers(settings, tmp_path, _servers(name), listing_workspace=workspace):
        call(f"{name}__echo", {"text": "first"}, agent=agent, workspace=workspace)
        before = _warm(name)
        assert UpstreamToolPin.objects.get(contract_name=f"{name}__note").status == "pinned"

        stop_servers([name])  # the server stops; it comes back changed
        (workspace / "pulled").write_text("1")
        # Only echo is called: the new session's own listing holds note.
        outcome, _, _ = call(f"{name}__echo", {"text": "again"}, agent=agent, workspace=workspace)
        assert outcome.content == "echo: again", "control: the unchanged tool runs"
        assert _warm(name) is not before, "a new session"
        pin = UpstreamToolPin.objects.get(contract_name=f"{name}__note")
        assert pin.status == "held", "held when the session opened, before any call to it"
        assert _shown(agent) == {f"{name}__echo"}


def _server_processes(workspace: Path) -> list[int]:
    """The sandbox processes of the server given ``workspace`` (bound into it by path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(workspace).encode() in argv and any(b"py_pull.py" in a for a in argv):
            found.append(int(entry.name))
    return found


def test_a_warm_server_that_died_is_started_again_for_the_next_call(
    settings: Any, tmp_path: Path, agent: Agent, workspace: Path
) -> None:
    name = server_name("died")
    with bridged_servers(settings, tmp_path, _servers(name), listing_workspace=workspace):
        call(f"{name}__echo", {"text": "first"}, agent=agent, workspace=workspace)
        first = _warm(name)
        # Control: a second call uses the same warm session (its listing is the check).
        outcome, _, _ = call(f"{name}__echo", {"text": "second"}, agent=agent, workspace=workspace)
        assert outcome.content == "echo: second" and _warm(name) is first
        pids = _server_processes(workspace)
        assert pids, "the server's sandbox is found by its workspace"
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not _server_processes(workspace), timeout=30, what="the server to die")
        # The dead session cannot list: it is dropped, the server started again, the call
        # answered by the new one, reviewed as it opened.
        outcome, _, _ = call(f"{name}__echo", {"text": "third"}, agent=agent, workspace=workspace)
        assert outcome.content == "echo: third", outcome
        assert _warm(name) is not first
        assert UpstreamToolPin.objects.get(contract_name=f"{name}__echo").status == "pinned"

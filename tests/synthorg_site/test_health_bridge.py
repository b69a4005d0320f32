"""/healthz's bridge parts: each configured MCP server with its state and reason, none
required, so a server that is down never takes the console out of rotation.

The states are written as workers' discovery writes them (``record_server_state``) to
the real Redis; a server a real worker fails to start is in
``tests/tools_app/bridge/test_failure_visibility``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.platform.redis import redis_client
from common.settings_config import config_reload, synthorg_config
from synthorg_site.health import health_report
from tools_app.bridge.health import SERVER_STATE_PREFIX, record_server_state

pytestmark = pytest.mark.django_db

NAMES = ("up", "down", "new", "off")


def _server(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "transport": "stdio", "command": ["node", "/opt/x.js"], **extra}


@pytest.fixture
def configured(settings: Any, tmp_path: Path) -> Iterator[None]:
    path = tmp_path / "synthorg.yaml"
    servers = [_server("up"), _server("down"), _server("new"), _server("off", enabled=False)]
    path.write_text(json.dumps({"mcp_servers": servers}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    yield
    redis_client().delete(*(SERVER_STATE_PREFIX + name for name in NAMES))


def test_each_server_has_its_state_and_reason_and_none_is_required(configured: None) -> None:
    servers = {s.name: s for s in synthorg_config().mcp_servers}
    record_server_state(servers["up"], available=True, tools=4)
    why = "the MCP server down failed its health check: it could not be started or listed"
    record_server_state(servers["down"], available=False, reason=why, stderr="Error: boom")
    report = health_report()
    parts = report["parts"]
    assert parts["bridge.up"]["state"] == "available" and parts["bridge.up"]["ok"] is True
    assert "listed 4 tool(s)" in parts["bridge.up"]["detail"]
    assert parts["bridge.down"]["state"] == "unavailable" and parts["bridge.down"]["ok"] is False
    assert parts["bridge.down"]["reason"] == why and why in parts["bridge.down"]["detail"]
    assert "boom" not in json.dumps(report), "/healthz is public: stderr stays with the admins"
    assert parts["bridge.new"]["state"] == "not checked yet" and not parts["bridge.new"]["ok"]
    assert parts["bridge.off"]["state"] == "disabled" and parts["bridge.off"]["ok"] is True
    summary = parts["bridge"]
    assert summary["ok"] is False and summary["required"] is False
    assert "2 of 4" in summary["detail"] and "down, new" in summary["detail"]
    assert all(not parts[f"bridge.{name}"]["required"] for name in NAMES)
    assert not [name for name in report["failing"] if name.startswith("bridge")]
    assert "bridge" not in report["degraded"]
    # Control: once every server lists, the summary is ok.
    record_server_state(servers["down"], available=True, tools=1)
    record_server_state(servers["new"], available=True, tools=2)
    again = health_report()["parts"]
    assert again["bridge"]["ok"] is True and again["bridge.down"]["state"] == "available"
    assert again["bridge.down"]["reason"] == ""


def test_without_servers_the_bridge_part_says_so() -> None:
    parts = health_report()["parts"]
    assert parts["bridge"] == {"ok": True, "required": False, "detail": "no MCP servers configured"}
    assert not [name for name in parts if name.startswith("bridge.")]

"""The tools pages show each configured upstream server: its state and reason, its tools
(an unavailable one with why), and for admins the last lines of a failed server's
standard error. Written as discovery writes them (records, audit rows, the state in the
real Redis); a real server failing under a real worker is in ``test_failure_visibility``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.platform.redis import redis_client
from common.settings_config import config_reload, synthorg_config
from tests.common.permission_suite import signed_in
from tools_app.bridge.catalog import forget_records
from tools_app.bridge.definitions import UpstreamTool
from tools_app.bridge.health import SERVER_STATE_PREFIX, record_server_state
from tools_app.bridge.services import bridge_discovery_record, bridge_server_unavailable
from trust_app.services.agents import person_create

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
WHY = "the MCP server srch failed its health check: it could not be started or listed"
STDERR = "Error: Cannot find module '/opt/srch/index.js'"


@pytest.fixture
def configured(settings: Any, tmp_path: Path) -> Iterator[None]:
    names = ("srch", "fresh", "lost")
    servers = [
        {"name": name, "transport": "stdio", "command": ["node", f"/opt/{name}/index.js"]}
        for name in names
    ]
    path = tmp_path / "synthorg.yaml"
    path.write_text(json.dumps({"mcp_servers": servers}))
    settings.SYNTHORG_CONFIG = str(path)
    config_reload()
    person_create(username="ada", role="admin", password=None)
    person_create(username="audrey", role="auditor", password=None)
    yield
    redis_client().delete(*(SERVER_STATE_PREFIX + name for name in names))
    forget_records()


def _row(html: str, attribute: str, name: str) -> str:
    start = html.index(f'{attribute}="{name}"')
    return html[start : html.index("</tr>", start)]


def test_servers_and_their_unavailable_tools_are_shown_with_the_reason(configured: None) -> None:
    srch, fresh, lost = synthorg_config().mcp_servers
    tools = [UpstreamTool(server="srch", name=n, description="Finds.", input_schema=SCHEMA)
             for n in ("find", "count")]  # fmt: skip
    bridge_discovery_record(server=srch, tools=tools)
    record_server_state(fresh, available=True, tools=2)
    bridge_discovery_record(
        server=fresh, tools=[UpstreamTool(server="fresh", name="ok", input_schema=SCHEMA)]
    )
    # srch listed once, then failed; lost never listed at all.
    bridge_server_unavailable(server="srch", reason=WHY, stderr=STDERR)
    record_server_state(srch, available=False, reason=WHY, stderr=STDERR)
    lost_why = WHY.replace("srch", "lost")
    bridge_server_unavailable(server="lost", reason=lost_why, stderr="lost's own words")
    record_server_state(lost, available=False, reason=lost_why, stderr="lost's own words")
    forget_records()

    html = signed_in("ada").get("/tools/").content.decode()
    found = _row(html, "data-tool", "srch__find")
    assert f"unavailable: {WHY}" in found, found
    assert "unavailable:" not in _row(html, "data-tool", "fresh__ok"), "control: it is callable"
    server = _row(html, "data-server", "srch")
    assert 'data-state="unavailable"' in server and WHY in server
    assert "0 of 2 available" in server and STDERR.replace("'", "&#x27;") in server
    never = _row(html, "data-server", "lost")
    assert "never listed its tools" in never and lost_why in never
    assert 'data-state="available"' in _row(html, "data-server", "fresh")
    assert "1 of 1 available" in _row(html, "data-server", "fresh")

    # An auditor reads the states and reasons, not the servers' standard error.
    seen = signed_in("audrey").get("/tools/").content.decode()
    assert WHY in _row(seen, "data-server", "srch") and "never listed" in seen
    assert "Cannot find module" not in seen and "lost's own words" not in seen
    # The admins' review page shows the servers with their standard error too.
    review = signed_in("ada").get("/tools/upstream/").content.decode()
    assert "lost&#x27;s own words" in _row(review, "data-server", "lost")

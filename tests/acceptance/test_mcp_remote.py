"""Remote (Streamable HTTP) upstream MCP servers, and list changes, on a console started as
`make run` starts it.

One real MCP server written with the official SDK (tests/tools_app/bridge/servers/
py_remote.py) serves over HTTP on loopback, on two ports and behind a self-signed
certificate; the console's config names it several ways: allowlisted by IP:port with a
granted secret header (the positive control of everything below), through a redirect to
its other port, by a name resolving to loopback, over https, and with a secret nobody
granted (its address without an allowlist entry is refused by `synthorg_config check`).
Discovery runs only at start (the health interval is an hour): anything the console
learns later comes from `notifications/tools/list_changed`. Agents call through REST and
the stock MCP client; people decide through the operators' REST endpoint and the admins'
review page.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from common.testing import BASE_DIR, free_port, python_argv, wait_until
from tests.acceptance.certificates import self_signed
from tests.acceptance.conftest import Console, _private_dir
from tests.acceptance.console import (
    TRACEBACK,
    Credentials,
    copy_var,
    decide,
    make_run_env,
    manage,
    start_launcher,
    stop_launcher,
)
from tests.acceptance.mcp_calls import invocation_of, rest_call, tools_listed
from tests.tools_app.mcp.conftest import with_mcp

SERVER = Path(__file__).resolve().parents[1] / "tools_app/bridge/servers/py_remote.py"
SLOW_TIMEOUT_SECONDS = 3
API_KEY = "remote-key-" + uuid.uuid4().hex
UNGRANTED = "vault-never-granted"
# Over the output cap (1 MiB by default), under the response cap (4 MiB).
BIG = 1_500_000
# Over the response cap: one streamed event too large to read.
HUGE = 5_000_000


@dataclass
class Remote:
    console: Console
    flags: Path
    port: int
    other_port: int

    def log(self) -> str:
        return self.console.launcher.output()


def _config(port: int, other_port: int, tls_port: int) -> str:
    here = f"127.0.0.1:{port}"
    return f"""
tools:
  remote__slow: {{timeout_seconds: {SLOW_TIMEOUT_SECONDS}}}
mcp_servers:
  - name: remote
    transport: http
    url: http://{here}/mcp
    network: ["{here}"]
    secrets: {{X-Api-Key: remote-api-key}}
  - name: moved
    transport: http
    url: http://{here}/moved/mcp
    network: ["{here}", "127.0.0.1:{other_port}"]
  - name: named
    transport: http
    url: http://localhost:{port}/mcp
  - name: selfsigned
    transport: http
    url: https://127.0.0.1:{tls_port}/mcp
    network: ["127.0.0.1:{tls_port}"]
  - name: locked
    transport: http
    url: http://{here}/mcp
    network: ["{here}"]
    secrets: {{X-Api-Key: {UNGRANTED}}}
"""


@pytest.fixture(scope="module")
def remote(prepared_var: Path, acceptance_root: Path) -> Iterator[Remote]:
    """The remote server, then a console configured with it; yields both."""
    root = _private_dir(acceptance_root, "remote.")
    flags = Path(tempfile.mkdtemp(prefix="flags.", dir=root))
    cert, key = self_signed(root)
    port, other_port, tls_port = free_port(), free_port(), free_port()
    server = subprocess.Popen(
        [sys.executable, str(SERVER), str(port), str(other_port), str(flags),
         str(tls_port), str(cert), str(key)],
        stdout=subprocess.DEVNULL, stderr=(root / "server.log").open("w"),
    )  # fmt: skip
    launcher = None
    try:
        wait_until(
            lambda: all(_listening(p) for p in (port, other_port, tls_port)),
            timeout=60, what="the remote MCP server to listen", poll=0.1,
        )  # fmt: skip
        config = root / "synthorg.yaml"
        config.write_text(_config(port, other_port, tls_port))
        copy_var(prepared_var, root / "var")
        env = make_run_env(root / "var")
        manage(env, "synthorg_secret", "set", "remote-api-key", stdin=API_KEY)
        manage(env, "synthorg_secret", "grant", "remote-api-key", "--server", "remote")
        launcher = start_launcher(
            root / "var",
            root / "launcher.log",
            extra_env={"SYNTHORG_CONFIG": str(config), "SYNTHORG_BRIDGE_HEALTH_INTERVAL": "3600"},
        )
        launcher.wait_healthy()
        console = Console(
            launcher=launcher, credentials=Credentials.read(root / "var" / "demo-credentials.txt")
        )
        wait_until(
            lambda: "remote__echo" in tools_listed(console),
            timeout=120, what="the remote tools to be discovered", poll=0.5,
        )  # fmt: skip
        yield Remote(console=console, flags=flags, port=port, other_port=other_port)
        code = stop_launcher(launcher)
        assert code == 0, launcher.output()[-6000:]
        assert TRACEBACK not in launcher.own_output(), launcher.output()[-6000:]
    finally:
        if launcher is not None:
            launcher.kill_everything()
        server.kill()
        server.wait(timeout=30)
        shutil.rmtree(flags, ignore_errors=True)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _mcp_names(console: Console, agent: str = "build-bot") -> set[str]:
    async def work(session: Any) -> Any:
        return await session.list_tools()

    return {
        t.name for t in with_mcp(console.base_url, console.credentials.agents[agent], work).tools
    }


# --- Reaching the server: only as configured.


def test_only_the_allowlisted_address_is_reached(remote: Remote) -> None:
    listed = tools_listed(remote.console)
    assert {"remote__echo", "remote__slow", "remote__api_key"} <= listed
    for refused in ("moved", "named", "selfsigned", "locked"):
        assert not {n for n in listed if n.startswith(f"{refused}__")}, refused
    # The refused servers are checked one after another once the console is up: wait
    # until each has said why before reading the reasons.
    wait_until(
        lambda: all(
            f"server {name} failed its health check" in remote.log()
            for name in ("moved", "named", "selfsigned", "locked")
        ),
        timeout=60, what="every refused server's health check", poll=0.3,
    )  # fmt: skip
    log = remote.log()
    # The same server by the name `localhost` is refused by the SSRF guard with the reason.
    assert re.search(r"server named failed its health check.*localhost.*loopback", log), log[-4000:]
    # Its redirect to the other port (a working MCP endpoint, itself allowlisted) is never
    # followed.
    assert re.search(r"server moved failed its health check.*not followed", log), log[-4000:]
    # TLS is verified: a self-signed certificate is refused.
    assert re.search(r"server selfsigned failed its health check.*CERTIFICATE_VERIFY_FAILED", log)
    assert "remote-api-key" not in log and API_KEY not in log
    assert re.search(r"server locked failed its health check.*no grant of it", log), log[-4000:]
    assert UNGRANTED not in log, "a secret not granted is never named"
    # Admins read the same reasons in the audit log, one row per server (each written a
    # moment after its log line).
    admin = remote.console.person("admin")

    def unavailable() -> dict[str, str]:
        events = admin.get(
            "/api/v1/audit/events/", params={"category": "mcp", "outcome": "unavailable"}
        ).json()["results"]
        return {
            e["data"]["server"]: e["reason"]
            for e in events
            if e["kind"] == "mcp.server_unavailable"
        }

    try:
        wait_until(lambda: len(unavailable()) == 4, timeout=30, what="four audit rows", poll=0.3)
        reasons = unavailable()
    finally:
        admin.close()
    assert set(reasons) == {"moved", "named", "selfsigned", "locked"}, reasons
    assert "loopback" in reasons["named"] and "no grant" in reasons["locked"], reasons
    assert UNGRANTED not in json.dumps(reasons)


def test_a_private_address_without_its_network_entry_is_refused_at_load(remote: Remote) -> None:
    config = remote.flags / "unlisted.yaml"
    url = f"http://127.0.0.1:{remote.port}/mcp"
    refused = _config_check(config, f"mcp_servers: [{{name: u, transport: http, url: '{url}'}}]")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = refused.stdout + refused.stderr
    assert "mcp_servers[0]" in said and f'add network: ["127.0.0.1:{remote.port}"]' in said, said
    # Control: the console's own config names the same url with its network entry, and
    # loaded (every test here calls through it).


def _config_check(path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path.write_text(text + "\n")
    return subprocess.run(
        python_argv("manage.py", "synthorg_config", "check", str(path)),
        cwd=BASE_DIR, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def test_an_allowed_call_runs_on_the_remote_server(remote: Remote) -> None:
    word = uuid.uuid4().hex[:8]
    done = rest_call(remote.console, "build-bot", "remote__echo", {"text": word})
    assert done["status"] == "succeeded", done
    assert done["result"]["content"] == f"echo: {word}"
    admin = remote.console.person("admin")
    try:
        events = admin.get("/api/v1/audit/events/", params={"tool": "remote__echo"}).json()
    finally:
        admin.close()
    rows = [e for e in events["results"] if e["kind"] == "mcp.call"]
    assert rows and rows[0]["data"]["server_identity"] == f"http://127.0.0.1:{remote.port}/mcp"


def test_a_stock_mcp_client_calls_the_remote_tool(remote: Remote) -> None:
    async def work(session: Any) -> Any:
        return await session.call_tool("remote__echo", {"text": "through the console"})

    console = remote.console
    result = with_mcp(console.base_url, console.credentials.agents["build-bot"], work)
    assert result.is_error is False
    assert "echo: through the console" in "\n".join(b.text for b in result.content)


def test_an_agent_without_the_mcp_category_is_denied(remote: Remote) -> None:
    with remote.console.agent("research-bot") as http:
        answer = http.post(
            "/api/v1/invocations/", json={"tool": "remote__echo", "arguments": {"text": "x"}}
        )
    # Control: build-bot's identical call above succeeds.
    assert answer.status_code in (201, 404), answer.text
    if answer.status_code == 201:
        assert answer.json()["status"] == "denied"


def test_a_write_waits_for_a_person_then_runs(remote: Remote) -> None:
    console = remote.console
    word = uuid.uuid4().hex[:8]
    first = rest_call(console, "ops-bot", "remote__note", {"text": word}, wait=0)
    assert first["status"] == "pending_approval", first
    operator = console.person("operator")
    try:
        decide(operator, first["approval"]["id"], "approve")
    finally:
        operator.close()
    wait_until(
        lambda: invocation_of(console, "ops-bot", first["id"])["status"] == "succeeded",
        timeout=60, what="the approved call to run", poll=0.3,
    )  # fmt: skip
    assert word in invocation_of(console, "ops-bot", first["id"])["result"]["content"]


def test_a_cancelled_call_is_cancelled_upstream(remote: Remote) -> None:
    console, marker = remote.console, uuid.uuid4().hex[:8]
    started = rest_call(
        console, "build-bot", "remote__slow", {"seconds": 60, "marker": marker}, wait=0
    )
    wait_until(
        (remote.flags / f"started-{marker}").exists,
        timeout=30, what="the server to start the slow call", poll=0.02,
    )  # fmt: skip
    with console.agent("build-bot") as http:
        asked = http.post(f"/api/v1/invocations/{started['id']}/cancel/").json()
    # Running: it stops when the server is told, and ends cancelled with what it said.
    assert asked["status"] in ("running", "cancelled"), asked
    wait_until(
        (remote.flags / f"cancelled-{marker}").exists,
        timeout=30, what="the server to see notifications/cancelled",
    )  # fmt: skip
    wait_until(
        lambda: invocation_of(console, "build-bot", started["id"])["status"] == "cancelled",
        timeout=30, what="the call to end cancelled", poll=0.3,
    )  # fmt: skip
    ended = invocation_of(console, "build-bot", started["id"])
    assert ended["error"]["code"] == "cancelled", ended


def test_a_hanging_call_times_out_and_is_cancelled_upstream(remote: Remote) -> None:
    console, marker = remote.console, uuid.uuid4().hex[:8]
    done = rest_call(console, "build-bot", "remote__slow", {"seconds": 60, "marker": marker})
    assert done["status"] == "timed_out", done
    wait_until(
        (remote.flags / f"cancelled-{marker}").exists,
        timeout=30, what="the server to see notifications/cancelled",
    )  # fmt: skip
    control = rest_call(
        console, "build-bot", "remote__slow", {"seconds": 0.1, "marker": marker + "x"}
    )
    assert control["status"] == "succeeded", control


def test_the_secret_header_reaches_the_server_and_never_the_agent(remote: Remote) -> None:
    done = rest_call(remote.console, "build-bot", "remote__api_key", {})
    assert done["status"] == "succeeded", done
    content = done["result"]["content"]
    # The server had the key (not "missing") and echoed it; the agent sees a marker.
    assert content.startswith("my key is ") and "missing" not in content, content
    assert API_KEY not in content and "[REDACTED" in content.upper(), content
    admin = remote.console.person("admin")
    try:
        events = admin.get("/api/v1/audit/events/", params={"outcome": "used"}).text
        audit = admin.get("/api/v1/audit/events/", params={"tool": "remote__api_key"}).text
    finally:
        admin.close()
    assert API_KEY not in events + audit
    assert "remote-api-key" in events, "each use of the secret is audited by name"


def test_a_withdrawn_secret_refuses_the_tools_without_naming_it(remote: Remote) -> None:
    console = remote.console
    admin = console.person("admin")
    shared = {"agent": "", "tool": "", "server": "remote"}
    try:
        # The admins' secrets page: the grant to the shared server is withdrawn...
        withdrawn = admin.post("/secrets/remote-api-key/ungrant/", data=shared)
        assert withdrawn.status_code == 302, withdrawn.text[:2000]
        try:
            refused = rest_call(console, "build-bot", "remote__echo", {"text": "no key"})
        finally:
            # ...and given back.
            granted = admin.post("/secrets/remote-api-key/grant/", data=shared)
            assert granted.status_code == 302, granted.text[:2000]
    finally:
        admin.close()
    assert refused["status"] in ("denied", "failed"), refused
    said = json.dumps(refused)
    assert "grant" in said and "remote-api-key" not in said and API_KEY not in said, said
    # Control: granted again, the same call runs.
    again = rest_call(console, "build-bot", "remote__echo", {"text": "key back"})
    assert again["status"] == "succeeded", again


def test_an_oversized_answer_is_cut_and_an_endless_one_refused(remote: Remote) -> None:
    big = rest_call(remote.console, "build-bot", "remote__big", {"size": BIG})
    assert big["status"] == "succeeded", big
    assert big["result"]["truncated"] is True
    assert len(big["result"]["content"]) < BIG
    flood = rest_call(remote.console, "build-bot", "remote__flood", {})
    assert flood["status"] == "failed", flood
    assert "SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES" in flood["error"]["message"], flood
    # A streamed answer is bounded per event by the same setting.
    huge = rest_call(remote.console, "build-bot", "remote__big", {"size": HUGE})
    assert huge["status"] == "failed", huge
    assert "byte limit" in huge["error"]["message"], huge
    again = rest_call(remote.console, "build-bot", "remote__echo", {"text": "after the flood"})
    assert again["status"] == "succeeded", again


# --- notifications/tools/list_changed, end to end.


def _review_form(console: Console, contract: str) -> tuple[str, str, str]:
    """The admins' review page: the held tool's form action, expected hash and the page."""
    admin = console.person("admin")
    try:
        page = admin.get("/tools/upstream/").text
    finally:
        admin.close()
    start = page.index(contract)
    action = re.search(r'action="(/tools/upstream/\d+/decide/)"', page[start:])
    expected = re.search(r'name="expected_hash" value="([0-9a-f]{64})"', page[start:])
    assert action and expected, page[start : start + 3000]
    return action.group(1), expected.group(1), page


def test_a_listed_change_reaches_agents_without_a_restart(remote: Remote) -> None:
    console = remote.console
    name = f"grown_{uuid.uuid4().hex[:6]}"
    contract = f"remote__{name}"
    assert contract not in tools_listed(console)
    grew = rest_call(console, "build-bot", "remote__grow", {"name": name})
    assert grew["status"] == "succeeded", grew
    wait_until(
        lambda: contract in tools_listed(console),
        timeout=30, what="the new tool to be listed", poll=0.3,
    )  # fmt: skip
    assert contract in _mcp_names(console)
    assert contract not in tools_listed(console, "research-bot"), "only to permitted agents"
    first = rest_call(console, "build-bot", contract, {"text": "hello"})
    assert first["status"] == "succeeded" and first["result"]["content"] == "grown: hello"

    # A changed definition is held, with the diff for an admin, until accepted.
    reworded = rest_call(
        console, "build-bot", "remote__reword",
        {"name": name, "description": "Say the text back, reworded."},
    )  # fmt: skip
    assert reworded["status"] == "succeeded", reworded

    def held() -> bool:
        answer = rest_call(console, "build-bot", contract, {"text": "again"}, wait=0)
        return answer["status"] == "denied"

    wait_until(held, timeout=30, what="the changed tool to be held", poll=0.3)
    refused = rest_call(console, "build-bot", contract, {"text": "again"}, wait=0)
    assert "held" in refused["decision"]["reason"], refused
    action, expected, page = _review_form(console, contract)
    assert "Say the text back, grown." in page and "Say the text back, reworded." in page
    admin = console.person("admin")
    try:
        accepted = admin.post(
            action,
            data={"decision": "accept", "reason": "reviewed", "expected_hash": expected},
            headers={"X-CSRFToken": admin.cookies["csrftoken"]},
        )
    finally:
        admin.close()
    assert accepted.status_code == 302, accepted.text[:2000]
    wait_until(
        lambda: rest_call(console, "build-bot", contract, {"text": "ok"})["status"] == "succeeded",
        timeout=30, what="the accepted tool to be callable", poll=0.3,
    )  # fmt: skip

    # A removed tool stays listed, unavailable with a reason.
    dropped = rest_call(console, "build-bot", "remote__drop", {"name": name})
    assert dropped["status"] == "succeeded", dropped

    def gone() -> bool:
        answer = rest_call(console, "build-bot", contract, {"text": "x"}, wait=0)
        return answer["status"] == "denied"

    wait_until(gone, timeout=30, what="the removed tool to be refused", poll=0.3)
    refused = rest_call(console, "build-bot", contract, {"text": "x"}, wait=0)
    assert "unavailable" in refused["decision"]["reason"], refused
    assert contract in tools_listed(console), "unavailable, never silently missing"

"""`mcp_servers` entries: every field of API.md's entry checked at load, errors by field."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.config import ConfigError, load_config
from common.config.mcp import McpServer, McpToolRules


def _load(tmp_path: Path, text: str) -> McpServer:
    path = tmp_path / "synthorg.yaml"
    path.write_text(text)
    return load_config(path).mcp_servers[0]


def _problems(tmp_path: Path, text: str) -> str:
    path = tmp_path / "synthorg.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


FULL = """
mcp_servers:
  - name: files
    transport: stdio
    command: [npx, server-filesystem, /workspace]
    sandbox: docker
    workspace: agent
    state: agent
    network: ["registry.example.com:443"]
    secrets: {GITHUB_TOKEN: github-pat}
    tools:
      allow: ["read_*", "list_*", "write_file"]
      deny: ["*_secret"]
      action_types: {write_file: "code:write", "read_*": "code:read"}
      safety_classes: {write_file: privileged}
  - name: search
    transport: http
    url: "https://mcp.example.com/mcp"
    secrets: {Authorization: search-token}
"""


def test_a_full_entry_loads_with_every_field(tmp_path: Path) -> None:
    path = tmp_path / "synthorg.yaml"
    path.write_text(FULL)
    files, search = load_config(path).mcp_servers
    assert files.backend == "docker" and files.workspace == "agent" and files.state == "agent"
    assert files.network == ("registry.example.com:443",)
    assert files.secrets == {"GITHUB_TOKEN": "github-pat"}
    assert files.identity == "npx server-filesystem /workspace"
    assert search.identity == "https://mcp.example.com/mcp"
    assert search.backend == "namespace" and search.workspace == "none"


def test_defaults_are_the_safe_side(tmp_path: Path) -> None:
    server = _load(tmp_path, "mcp_servers: [{name: a, transport: stdio, command: [x]}]\n")
    assert server.backend == "namespace"
    assert server.workspace == "none" and server.state == "worker" and server.network == ()
    assert server.tools.admits("anything")


def test_tool_globs_allow_deny_and_classes() -> None:
    rules = McpToolRules(
        allow=("read_*", "write_file"),
        deny=("read_secret*",),
        action_types={"write_file": "code:write", "read_*": "code:read"},
        safety_classes={"*": "network", "write_file": "privileged"},
    )
    assert rules.admits("read_text") and rules.admits("write_file")
    assert not rules.admits("read_secrets"), "deny wins over allow"
    assert not rules.admits("delete_file"), "not allowed is not admitted"
    assert rules.action_type_for("read_text") == "code:read"
    assert rules.action_type_for("other") is None
    assert rules.safety_class_for("write_file") == "privileged", "an exact key beats a glob"
    assert rules.safety_class_for("other") == "network"


@pytest.mark.parametrize(
    ("entry", "field", "says"),
    [
        ("{name: a, transport: stdio, command: [x], sandbox: subprocess}", "sandbox", "namespace"),
        ("{name: a, transport: stdio, command: [x], workspace: all}", "workspace", "agent"),
        ("{name: a, transport: stdio, command: [x], state: shared}", "state", "worker"),
        ("{name: a, transport: stdio, command: [x], network: ['example.com']}", "network", "port"),
        ("{name: a, transport: stdio, command: [x], network: ['a b:1']}", "network", "a b:1"),
        ("{name: a, transport: stdio, command: [x], secrets: {'bad-name': s}}", "", "variable"),
        ("{name: a, transport: stdio, command: [x], secrets: {T: 'no way'}}", "", "secret name"),
        ("{name: a, transport: http, url: 'https://x.example', secrets: {Host: s}}", "", "header"),
        ("{name: a, transport: http, url: 'https://x.example', sandbox: docker}", "", "only for"),
        ("{name: a, transport: http, url: 'https://x.example', workspace: agent}", "", "only for"),
        (
            "{name: a, transport: http, url: 'http://localhost:8000', network: ['localhost:8000']}",
            "network",
            "IP:port",
        ),
        (
            "{name: a, transport: http, url: 'http://10.0.0.7/mcp', network: ['10.0.0.7:81']}",
            "url",
            'add network: ["10.0.0.7:80"]',
        ),
        ("{name: a, transport: stdio, command: [x], tools: {allow: ['a b']}}", "allow", "glob"),
        (
            "{name: a, transport: stdio, command: [x], tools: {action_types: {t: 'code:wrte'}}}",
            "action_types",
            "unknown action type 'code:wrte'",
        ),
        (
            "{name: a, transport: stdio, command: [x], tools: {safety_classes: {t: risky}}}",
            "safety_classes",
            "privileged",
        ),
        ("{name: a, transport: stdio, command: [x], tools: {alow: ['*']}}", "alow", "allowed fi"),
        ("{name: a__b, transport: stdio, command: [x]}", "name", "__"),
        ("{name: a, transport: stdio, command: ['']}", "command", "program"),
    ],
)
def test_each_bad_field_is_named(tmp_path: Path, entry: str, field: str, says: str) -> None:
    message = _problems(tmp_path, f"mcp_servers: [{entry}]\n")
    assert "mcp_servers[0]" in message, message
    assert field in message and says in message, message


def test_an_http_server_names_its_private_address_in_network(tmp_path: Path) -> None:
    server = _load(
        tmp_path,
        "mcp_servers: [{name: a, transport: http, url: 'http://127.0.0.1:8000/mcp',"
        " network: ['127.0.0.1:8000']}]\n",
    )
    assert server.network == ("127.0.0.1:8000",)


def test_custom_action_types_are_accepted(tmp_path: Path) -> None:
    server = _load(
        tmp_path,
        "tool_access: {custom_action_types: ['search:query']}\n"
        "mcp_servers: [{name: a, transport: stdio, command: [x],"
        " tools: {action_types: {'*': 'search:query'}}}]\n",
    )
    assert server.tools.action_type_for("find") == "search:query"

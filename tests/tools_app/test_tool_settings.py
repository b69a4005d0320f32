"""Each tool's own settings (`tools.<name>.<key>`) are checked by value when the config
loads, naming the field and what is allowed, not first when an agent calls the tool."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from common.config import ConfigError, load_config, parse_config
from common.testing import BASE_DIR, python_argv
from tools_app.builtin.database.config import DatabaseToolSettings
from tools_app.builtin.discovery.budget import DisclosureSettings
from tools_app.builtin.file_system.execution import FileSystemSettings
from tools_app.builtin.terminal.settings import TerminalSettings
from tools_app.registry import TOOL_SETTINGS_KEYS, TOOL_SETTINGS_MODELS, build_catalog


def refused(tools: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        build_catalog(parse_config({"tools": tools}))
    return str(caught.value)


# (tool, a bad section, the path named, words of the allowed range in the message)
BAD_VALUES = [
    (
        "shell_command",
        {"max_timeout_seconds": -5},
        "tools.shell_command.max_timeout_seconds",
        "-5 is not allowed; allowed: a number above 0",
    ),
    (
        "shell_command",
        {"command_mode": "yes"},
        "tools.shell_command.command_mode",
        "'yes' is not allowed; allowed: true or false",
    ),
    (
        "shell_command",
        {"search_path": "bin:/usr/bin"},
        "tools.shell_command.search_path",
        "absolute path",
    ),
    (
        "shell_command",
        {"allowed_commands": "ls"},
        "tools.shell_command.allowed_commands",
        "allowed: a list of strings",
    ),
    (
        "read_file",
        {"max_read_bytes": "lots"},
        "tools.read_file.max_read_bytes",
        "'lots' is not allowed; allowed: an integer above 0",
    ),
    (
        "write_file",
        {"max_write_bytes": 0},
        "tools.write_file.max_write_bytes",
        "0 is not allowed; allowed: an integer above 0",
    ),
    (
        "list_directory",
        {"read_only": 1},
        "tools.list_directory.read_only",
        "1 is not allowed; allowed: true or false",
    ),
    (
        "sql_query",
        {"max_rows": 0},
        "tools.sql_query.max_rows",
        "0 is not allowed; allowed: an integer at least 1 and at most 100000",
    ),
    (
        "schema_inspect",
        {"statement_timeout_seconds": "soon"},
        "tools.schema_inspect.statement_timeout_seconds",
        "allowed: a number above 0 and at most 3600",
    ),
    (
        "http_request",
        {"dns_port": 70000},
        "tools.http_request.dns_port",
        "70000 is not allowed; allowed: an integer at least 1 and at most 65535",
    ),
    (
        "http_request",
        {"max_response_bytes": -1},
        "tools.http_request.max_response_bytes",
        "-1 is not allowed; allowed: a number above 0",
    ),
    (
        "memory_store",
        {"max_tags": -1},
        "tools.memory_store.max_tags",
        "-1 is not allowed; allowed: an integer at least 1",
    ),
    (
        "memory_search",
        {"max_results": 2.5},
        "tools.memory_search.max_results",
        "2.5 is not allowed; allowed: an integer at least 1",
    ),
    (
        "load_tool",
        {"unload_threshold_percent": 150},
        "tools.load_tool.unload_threshold_percent",
        "allowed: a number above 0 and at most 100",
    ),
    (
        "git_push",
        {"allow_plain_http": "false"},
        "tools.git_push.allow_plain_http",
        "allowed: true or false",
    ),
    (
        "code_runner",
        {"max_code_bytes": True},
        "tools.code_runner.max_code_bytes",
        "true is not allowed; allowed: a number above 0",
    ),
]


@pytest.mark.parametrize(("tool", "section", "path", "allowed"), BAD_VALUES)
def test_a_bad_value_is_refused_at_load_with_the_field_and_the_range(
    tool: str, section: dict[str, Any], path: str, allowed: str
) -> None:
    message = refused({tool: section})
    assert f"{path}: " in message
    assert allowed in message


@pytest.mark.parametrize(
    ("tool", "key"),
    [
        ("shell_command", "max_timeout"),
        ("read_file", "max_reed_bytes"),
        ("sql_query", "max_tables"),  # schema_inspect's only
        ("http_request", "max_redirect"),
        ("memory_store", "max_results"),  # memory_search's only
        ("memory_recall", "max_results"),
    ],
)
def test_an_unknown_key_names_the_tools_settings(tool: str, key: str) -> None:
    message = refused({tool: {key: 1}})
    assert f"tools.{tool}.{key}: unknown setting; allowed: " in message
    allowed = message.split("allowed: ", 1)[1]
    assert "enabled" in allowed and "timeout_seconds" in allowed
    assert all(name in allowed for name in TOOL_SETTINGS_KEYS[tool])


VALID = {
    "shell_command": {
        "allowed_commands": ["ls", "git"],
        "denied_commands": ["python3"],
        "command_mode": True,
        "max_timeout_seconds": 120,
        "max_command_length": 4096,
        "search_path": "/usr/local/bin:/usr/bin:/bin",
        "read_only": False,
        "max_link_scan_entries": 1000,
        "allowed_hosts": ["pypi.org"],
        "denied_hosts": [],
    },
    "read_file": {
        "max_path_length": 1024,
        "max_read_bytes": 4096,
        "max_write_bytes": 4096,
        "max_entries": 10,
        "read_only": True,
        "denied_paths": ["secrets/**"],
    },
    "sql_query": {
        "connections": {"local": {"url": "sqlite:////srv/data/local.db", "agents": ["bot"]}},
        "max_rows": 500,
        "statement_timeout_seconds": 2.5,
    },
    "schema_inspect": {"max_tables": 50},
    "http_request": {
        "allowed_domains": ["example.com"],
        "denied_domains": ["*.internal"],
        "max_response_bytes": 65536,
        "max_redirects": 3,
        "auth_headers": {"api.example.com": {"Authorization": "Bearer x"}},
        "dns_server": "1.1.1.1",
        "dns_port": 53,
    },
    "extract_links": {"max_links": 50},
    "html_to_text": {"max_text_chars": 5000},
    "memory_store": {"max_content_chars": 100, "max_tags": 3, "max_memories_per_agent": 10},
    "memory_search": {"max_results": 5},
    "list_tools": {"l1_token_budget": 1000},
    "load_tool": {
        "l2_token_budget": 2000,
        "auto_unload_on_budget_pressure": False,
        "unload_threshold_percent": 50,
    },
    "git_commit": {
        "author_name": "Bot",
        "author_email": "bot@example.com",
        "ssh_known_hosts_file": "/etc/ssh/known_hosts",
        "allow_plain_http": False,
        "hostname_allowlist": ["git.internal"],
    },
    "code_runner": {"max_timeout_seconds": 60, "max_code_bytes": 1024, "read_only": True},
}


def test_the_same_settings_with_valid_values_load() -> None:
    catalog = build_catalog(parse_config({"tools": VALID}))
    assert catalog.contract("shell_command") is not None


def test_valid_values_still_read_the_same_at_call_time() -> None:
    config = parse_config({"tools": VALID})
    terminal = TerminalSettings.from_mapping(
        config.tool_settings("shell_command").model_extra or {}
    )
    assert terminal.max_timeout_seconds == 120.0
    assert terminal.search_path == ("/usr/local/bin", "/usr/bin", "/bin")
    files = FileSystemSettings.from_mapping(config.tool_settings("read_file").model_extra or {})
    assert files.max_read_bytes == 4096 and files.denied_paths == ("secrets/**",)
    database = DatabaseToolSettings.model_validate(
        config.tool_settings("sql_query").model_extra or {}
    )
    assert database.max_rows == 500 and "local" in database.connections


def test_the_default_config_loads_and_the_models_keep_the_defaults() -> None:
    build_catalog(parse_config({}))
    assert TerminalSettings.from_mapping({}) == TerminalSettings.from_mapping(
        TOOL_SETTINGS_MODELS["shell_command"]().model_dump()
    )
    assert FileSystemSettings.from_mapping({}) == FileSystemSettings.from_mapping(
        TOOL_SETTINGS_MODELS["read_file"]().model_dump(exclude_none=True)
    )
    assert DatabaseToolSettings() == DatabaseToolSettings.model_validate(
        TOOL_SETTINGS_MODELS["schema_inspect"]().model_dump()
    )
    assert DisclosureSettings() == DisclosureSettings.model_validate(
        {
            **TOOL_SETTINGS_MODELS["list_tools"]().model_dump(),
            **TOOL_SETTINGS_MODELS["load_tool"]().model_dump(),
        }
    )


def test_every_problem_is_named_at_once_and_a_password_is_not_echoed() -> None:
    message = refused(
        {
            "read_file": {"max_entries": -1, "max_read_bytes": "big"},
            "sql_query": {"connections": {"main": {"url": "mysql://u:hunter2@db/x"}}},
        }
    )
    assert "tools.read_file.max_entries: -1 is not allowed" in message
    assert "tools.read_file.max_read_bytes: 'big' is not allowed" in message
    assert "tools.sql_query.connections.main.url: url must start with" in message
    assert "hunter2" not in message


def test_a_yaml_file_with_a_bad_value_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "synthorg.yaml"
    path.write_text(
        dedent(
            """\
            tools:
              shell_command:
                max_timeout_seconds: -5
              memory_store:
                max_tags: many
            """
        ),
        encoding="utf-8",
    )
    config = load_config(path)  # the common switches are fine: the file parses
    with pytest.raises(ConfigError) as caught:
        build_catalog(config)
    message = str(caught.value)
    assert "tools.shell_command.max_timeout_seconds: -5 is not allowed" in message
    assert "tools.memory_store.max_tags: 'many' is not allowed; allowed: an integer" in message


def test_the_config_check_command_refuses_a_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("tools:\n  read_file:\n    max_read_bytes: -1\n", encoding="utf-8")
    result = subprocess.run(
        python_argv("manage.py", "synthorg_config", "check", str(path)),
        cwd=BASE_DIR, env=dict(os.environ), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert "tools.read_file.max_read_bytes: -1 is not allowed; allowed: an integer above 0" in (
        result.stderr
    )

"""The tool registry: every built-in tool registered, and each tool's settings checked."""

from __future__ import annotations

import pytest

from common.config import ConfigError, parse_config
from tools_app.registry import BUILTIN_TOOL_MODULES, TOOL_SETTINGS_KEYS, build_catalog


def test_every_builtin_tool_is_registered_with_known_settings() -> None:
    # The opt-in categories' sections are present, so their tools are registered too.
    catalog = build_catalog(parse_config({"browser": {}}))
    names = {contract.name for contract in catalog}
    assert {"read_file", "shell_command", "code_runner", "git_clone", "http_request"} <= names
    assert all(catalog.implementation(name) is not None for name in names)
    assert set(TOOL_SETTINGS_KEYS) <= names
    assert len(BUILTIN_TOOL_MODULES) >= 5


def test_a_misspelt_tool_setting_names_the_tool_and_its_settings() -> None:
    config = parse_config({"tools": {"read_file": {"timeout": 3}}}, source="policy.yaml")
    with pytest.raises(ConfigError) as caught:
        build_catalog(config)
    message = str(caught.value)
    assert "tools.read_file.timeout: unknown setting" in message
    assert "timeout_seconds" in message and "max_read_bytes" in message


def test_an_unknown_tool_is_named_with_the_tools_there_are() -> None:
    with pytest.raises(ConfigError, match=r"tools\.raed_file: no such tool; allowed: .*read_file"):
        build_catalog(parse_config({"tools": {"raed_file": {}}}))


def test_a_tool_switched_off_in_the_config_is_not_registered() -> None:
    catalog = build_catalog(parse_config({"tools": {"shell_command": {"enabled": False}}}))
    assert catalog.contract("shell_command") is None
    assert catalog.contract("read_file") is not None

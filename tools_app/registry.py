"""The tools this process can run: built-in modules plus any configured extra modules.

Every contract goes through the pure `ToolRegistry`, which refuses broken schemas,
injection signatures and look-alike names; a module that fails to load stops the
process (fail closed) rather than silently running with fewer checks.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from jsonschema import Draft202012Validator

from common.config import ConfigError, ConfigProblem, SynthOrgConfig, ToolSettings
from common.settings_config import synthorg_config
from common.vocabulary.action_types import DEFAULT_ACTION_TYPES, ActionTypeRegistry
from tools_app.builtin.base import BuiltinTool
from tools_app.contracts import ToolContract, ToolRegistry, compile_schema
from trust_app.policy import ToolView, name_key

# Modules whose `TOOLS` tuple holds the built-in tools, in listing order.
BUILTIN_TOOL_MODULES: tuple[str, ...] = (
    "tools_app.builtin.file_system.tools",
    "tools_app.builtin.terminal.tools",
    "tools_app.builtin.code.tools",
    "tools_app.builtin.git.tools",
    "tools_app.builtin.web.tools",
    "tools_app.builtin.memory.tools",
    "tools_app.builtin.database.tools",
    "tools_app.builtin.discovery.tools",
)

# Settings each built-in tool reads from `tools.<name>` in the config, beyond the
# switches every tool has (enabled, timeout_seconds, max_output_bytes,
# max_calls_per_minute). Any other key is a typo and stops the process.
_FILE_KEYS = frozenset(
    {
        "max_path_length",
        "max_read_bytes",
        "max_write_bytes",
        "max_entries",
        "read_only",
        "denied_paths",
    }
)
_NET_KEYS = frozenset({"dns_server", "dns_port"})
_DATABASE_KEYS = frozenset(
    {
        "connections",
        "max_rows",
        "statement_timeout_seconds",
        "connect_timeout_seconds",
        "max_query_chars",
        "max_cell_chars",
        "memory_limit_mb",
        "max_value_bytes",
        "max_result_bytes",
        "process_grace_seconds",
    }
)
TOOL_SETTINGS_KEYS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("sql_query", "db_mutate"), _DATABASE_KEYS),
    "list_tools": frozenset({"l1_token_budget"}),
    "load_tool": frozenset(
        {"l2_token_budget", "auto_unload_on_budget_pressure", "unload_threshold_percent"}
    ),
    "load_tool_resource": frozenset(),
    "schema_inspect": _DATABASE_KEYS | {"max_tables"},
    "memory_store": frozenset({"max_content_chars", "max_tags", "max_memories_per_agent"}),
    "memory_search": frozenset({"max_results"}),
    "memory_recall": frozenset(),
    **dict.fromkeys(
        ("read_file", "write_file", "edit_file", "list_directory", "delete_file", "stat"),
        _FILE_KEYS,
    ),
    "shell_command": frozenset(
        {
            "allowed_commands",
            "denied_commands",
            "command_mode",
            "max_timeout_seconds",
            "max_command_length",
            "search_path",
            "read_only",
            "max_link_scan_entries",
            "allowed_hosts",
            "denied_hosts",
        }
    ),
    "code_runner": frozenset(
        {
            "max_timeout_seconds",
            "max_code_bytes",
            "read_only",
            "max_link_scan_entries",
            "allowed_hosts",
            "denied_hosts",
        }
    ),
    **dict.fromkeys(
        ("http_request", "html_to_text", "extract_links"),
        _NET_KEYS
        | {
            "allowed_domains",
            "denied_domains",
            "max_response_bytes",
            "max_redirects",
            "auth_headers",
            "max_links",
            "max_text_chars",
        },
    ),
    **dict.fromkeys(
        ("git_status", "git_log", "git_diff", "git_branch", "git_commit", "git_clone", "git_push"),
        _NET_KEYS
        | {
            "hostname_allowlist",
            "denied_hosts",
            "allow_plain_http",
            "ssh_known_hosts_file",
            "author_name",
            "author_email",
        },
    ),
}

# How the decision engine names the isolation of each sandbox backend.
ISOLATION_OF_BACKEND = {
    "subprocess": "subprocess",
    "namespace": "namespace",
    "docker": "containerized",
}


class ToolModuleInvalidError(RuntimeError):
    pass


@dataclass(frozen=True)
class ToolCatalog:
    """Contracts and their implementations, by normalised name."""

    registry: ToolRegistry
    implementations: dict[str, BuiltinTool]
    # The action types contracts were checked against (built-in plus custom).
    action_types: ActionTypeRegistry = DEFAULT_ACTION_TYPES

    def implementation(self, name: str) -> BuiltinTool | None:
        return self.implementations.get(name_key(name))

    def contract(self, name: str) -> ToolContract | None:
        return self.registry.get(name)

    def __iter__(self) -> Iterator[ToolContract]:
        return iter(self.registry)


def _module_tools(module_name: str) -> tuple[BuiltinTool, ...]:
    module = importlib.import_module(module_name)
    tools = getattr(module, "TOOLS", None)
    if not isinstance(tools, tuple) or not all(isinstance(t, BuiltinTool) for t in tools):
        raise ToolModuleInvalidError(f"{module_name}.TOOLS must be a tuple of built-in tools")
    return tools


@functools.cache
def builtin_catalog() -> ToolCatalog:
    """The tools this code defines (built-in and extra modules), validated once."""
    return build_catalog(synthorg_config())


def tool_catalog() -> ToolCatalog:
    """Every tool this process can run: the built-ins plus the upstream MCP tools the
    bridge has recorded (tools_app.bridge.catalog)."""
    from tools_app.bridge.catalog import with_bridged

    return with_bridged(builtin_catalog())


def build_catalog(config: SynthOrgConfig) -> ToolCatalog:
    """The tools `config` enables, each contract checked; ConfigError for bad tool settings."""
    registry = ToolRegistry(action_types=config.action_types())
    implementations: dict[str, BuiltinTool] = {}
    modules = (*BUILTIN_TOOL_MODULES, *settings.SYNTHORG_EXTRA_TOOL_MODULES)
    for module_name in modules:
        for tool in _module_tools(module_name):
            if not config.tool_settings(tool.contract.name).enabled:
                continue  # switched off in the config: not registered at all
            contract = registry.register(tool.contract)
            implementations[name_key(contract.name)] = tool
    _check_tool_settings(config, registry)
    return ToolCatalog(
        registry=registry, implementations=implementations, action_types=config.action_types()
    )


def _check_tool_settings(config: SynthOrgConfig, registry: ToolRegistry) -> None:
    """Every `tools.<name>` names a real tool and only settings that tool reads."""
    known = {name_key(name) for name in TOOL_SETTINGS_KEYS}
    problems = []
    for name, section in config.tools.items():
        contract = registry.get(name)
        if contract is None and _bridged_name(config, name):
            contract_settings = frozenset[str]()  # an upstream tool: only the common switches
            for key in sorted(set(section.model_extra or {}) - contract_settings):
                problems.append(
                    ConfigProblem(
                        f"tools.{name}.{key}",
                        "unknown setting; allowed: " + ", ".join(ToolSettings.model_fields),
                    )
                )
            continue
        if contract is None and name_key(name) not in known:
            names = ", ".join(sorted(c.name for c in registry))
            problems.append(ConfigProblem(f"tools.{name}", f"no such tool; allowed: {names}"))
            continue
        allowed = TOOL_SETTINGS_KEYS.get(contract.name if contract else name, frozenset())
        for key in sorted(set(section.model_extra or {}) - allowed):
            problems.append(
                ConfigProblem(
                    f"tools.{name}.{key}",
                    "unknown setting; allowed: "
                    + ", ".join(sorted(allowed | set(ToolSettings.model_fields))),
                )
            )
    if problems:
        raise ConfigError(settings.SYNTHORG_CONFIG, tuple(problems))


def _bridged_name(config: SynthOrgConfig, name: str) -> bool:
    """True for ``<server>__<tool>`` of a configured MCP server (discovered at run time)."""
    server, separator, tool = name.partition("__")
    return bool(separator and tool) and any(s.name == server for s in config.mcp_servers)


_validators: dict[tuple[str, str], Draft202012Validator] = {}


def schema_validator(contract: ToolContract, which: str) -> Draft202012Validator:
    """The compiled input or output schema of a contract, compiled once per definition."""
    key = (contract.definition_hash, which)
    validator = _validators.get(key)
    if validator is None:
        schema = contract.input_schema if which == "input_schema" else contract.output_schema
        validator = _validators[key] = compile_schema(schema, which)
    return validator


def backend_for(contract: ToolContract) -> str:
    """The sandbox backend the config assigns to the tool's category."""
    return synthorg_config().sandboxing.backend_for(contract.category.value)


def tool_view(contract: ToolContract, *, enabled: bool = True) -> ToolView:
    """The decision engine's view of a tool, with the isolation its backend gives."""
    return contract.policy_view(
        isolation=ISOLATION_OF_BACKEND[backend_for(contract)], enabled=enabled
    )

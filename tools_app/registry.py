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
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from django.conf import settings
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from common.config import ConfigError, ConfigProblem, SynthOrgConfig, ToolSettings
from common.settings_config import synthorg_config
from common.vocabulary.action_types import DEFAULT_ACTION_TYPES, ActionTypeRegistry
from tools_app.builtin.base import BuiltinTool
from tools_app.builtin.browser.settings import BrowserToolSettings
from tools_app.builtin.code.settings import CodeRunnerSettings
from tools_app.builtin.database.config import SchemaInspectSettings, SqlToolSettings
from tools_app.builtin.discovery.budget import (
    ListToolsSettings,
    LoadToolResourceSettings,
    LoadToolSettings,
)
from tools_app.builtin.file_system.settings import FileToolSettings
from tools_app.builtin.git.settings import GitToolSettings
from tools_app.builtin.memory.settings import (
    MemoryRecallSettings,
    MemorySearchSettings,
    MemoryStoreSettings,
)
from tools_app.builtin.terminal.settings import ShellCommandSettings
from tools_app.builtin.web.settings import WebToolSettings
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
    "tools_app.builtin.external_data.tool",
    "tools_app.builtin.communication.tools",
    "tools_app.builtin.analytics.tools",
    "tools_app.builtin.deployment.tools",
    "tools_app.builtin.browser.tools",
    "tools_app.builtin.browser.checks",
    "tools_app.builtin.browser.diff",
    "tools_app.builtin.desktop.tools",
    "tools_app.builtin.design.tools",
)

# The model of the settings each built-in tool reads from `tools.<name>` in the config,
# beyond the switches every tool has (`ToolSettings`: enabled, timeout_seconds,
# max_output_bytes, max_calls_per_minute). A key no model names is a typo and a value
# its model refuses is a mistake: either stops the process at load, naming the field.
TOOL_SETTINGS_MODELS: dict[str, type[BaseModel]] = {
    **dict.fromkeys(("sql_query", "db_mutate"), SqlToolSettings),
    "schema_inspect": SchemaInspectSettings,
    "list_tools": ListToolsSettings,
    "load_tool": LoadToolSettings,
    "load_tool_resource": LoadToolResourceSettings,
    "memory_store": MemoryStoreSettings,
    "memory_search": MemorySearchSettings,
    "memory_recall": MemoryRecallSettings,
    **dict.fromkeys(
        ("read_file", "write_file", "edit_file", "list_directory", "delete_file", "stat"),
        FileToolSettings,
    ),
    **dict.fromkeys(
        (
            "browser_navigate",
            "browser_screenshot",
            "browser_diff",
            "browser_accessibility_scan",
            "browser_spec",
        ),
        BrowserToolSettings,
    ),
    "shell_command": ShellCommandSettings,
    "code_runner": CodeRunnerSettings,
    **dict.fromkeys(("http_request", "html_to_text", "extract_links"), WebToolSettings),
    **dict.fromkeys(
        ("git_status", "git_log", "git_diff", "git_branch", "git_commit", "git_clone", "git_push"),
        GitToolSettings,
    ),
}
# The keys each tool's model names.
TOOL_SETTINGS_KEYS: dict[str, frozenset[str]] = {
    name: frozenset(model.model_fields) for name, model in TOOL_SETTINGS_MODELS.items()
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


def build_catalog(config: SynthOrgConfig, source: str | None = None) -> ToolCatalog:
    """The tools `config` enables, each contract checked; ConfigError for bad tool settings.

    ``source`` names the file `config` came from in errors (the loaded config by default).
    """
    registry = ToolRegistry(action_types=config.action_types())
    implementations: dict[str, BuiltinTool] = {}
    modules = (*BUILTIN_TOOL_MODULES, *settings.SYNTHORG_EXTRA_TOOL_MODULES)
    for module_name in modules:
        for tool in _module_tools(module_name):
            if not config.tool_settings(tool.contract.name).enabled:
                continue  # switched off in the config: not registered at all
            offered = getattr(tool, "offered", None)
            if offered is not None and not offered(config):
                continue  # opt-in: its config section is absent
            contract = registry.register(tool.contract)
            implementations[name_key(contract.name)] = tool
    _check_tool_settings(config, registry, source or str(settings.SYNTHORG_CONFIG))
    return ToolCatalog(
        registry=registry, implementations=implementations, action_types=config.action_types()
    )


def _check_tool_settings(config: SynthOrgConfig, registry: ToolRegistry, source: str) -> None:
    """Every `tools.<name>` names a real tool and only settings that tool reads, each
    with a value the tool's settings model accepts."""
    known = {name_key(name): model for name, model in TOOL_SETTINGS_MODELS.items()}
    problems: list[ConfigProblem] = []
    for name, section in config.tools.items():
        contract = registry.get(name)
        extra = dict(section.model_extra or {})
        if contract is None and _bridged_name(config, name):
            # An upstream tool: only the common switches.
            for key in sorted(extra):
                problems.append(
                    ConfigProblem(
                        f"tools.{name}.{key}",
                        "unknown setting; allowed: " + ", ".join(ToolSettings.model_fields),
                    )
                )
            continue
        model = known.get(name_key(contract.name if contract else name))
        if contract is None and model is None:
            names = ", ".join(sorted(c.name for c in registry))
            problems.append(ConfigProblem(f"tools.{name}", f"no such tool; allowed: {names}"))
            continue
        problems.extend(_section_problems(name, model, extra))
    if problems:
        raise ConfigError(source, tuple(problems))


def _section_problems(
    name: str, model: type[BaseModel] | None, extra: dict[str, Any]
) -> list[ConfigProblem]:
    """The unknown keys of one tool's section, then every value its model refuses."""
    fields = model.model_fields if model is not None else {}
    allowed = sorted(set(fields) | set(ToolSettings.model_fields))
    problems = [
        ConfigProblem(f"tools.{name}.{key}", "unknown setting; allowed: " + ", ".join(allowed))
        for key in sorted(set(extra) - set(fields))
    ]
    if model is None:
        return problems
    try:
        model.model_validate({key: value for key, value in extra.items() if key in fields})
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            problems.append(ConfigProblem(_dotted(name, loc), _value_message(model, loc, error)))
    return problems


_BOUND_WORDS = (("gt", "above"), ("ge", "at least"), ("lt", "below"), ("le", "at most"))
_KINDS: dict[object, tuple[str, str]] = {
    bool: ("true or false", "true/false values"),
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    str: ("a string", "strings"),
}


def _kind(annotation: Any, *, plural: bool = False) -> str:
    """A type in words: ``tuple[str, ...] | None`` is "a list of strings, or null"."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _kind(args[0], plural=plural)
    if origin in (Union, UnionType):
        words = [_kind(arg, plural=plural) for arg in args if arg is not type(None)]
        return " or ".join(words) + (", or null" if type(None) in args else "")
    if annotation in _KINDS:
        return _KINDS[annotation][plural]
    if origin in (tuple, list):
        return ("lists" if plural else "a list") + " of " + _kind(args[0], plural=True)
    if origin is dict:
        return "mappings" if plural else "a mapping"
    return "values" if plural else "a value"


def _allowed_values(field: FieldInfo) -> str:
    """What a setting accepts, in words, with its range: "a number above 0 and at most 3600"."""
    bounds = [
        f"{word} {getattr(item, attr):g}"
        for item in field.metadata
        for attr, word in _BOUND_WORDS
        if getattr(item, attr, None) is not None
    ]
    bounds += [f"matching {p}" for item in field.metadata if (p := getattr(item, "pattern", None))]
    return " ".join([_kind(field.annotation), " and ".join(bounds)]).strip()


def _dotted(name: str, loc: tuple[Any, ...]) -> str:
    path = f"tools.{name}"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _value_message(model: type[BaseModel], loc: tuple[Any, ...], error: Any) -> str:
    """The problem with one value, naming what is allowed. A string is echoed only where a
    number or flag goes (a list or mapping setting may hold a URL with its password)."""
    message = str(error["msg"]).removeprefix("Value error, ")
    field = model.model_fields.get(str(loc[0])) if loc else None
    if field is None or len(loc) != 1 or error["type"] == "value_error":
        return message
    value = error.get("input")
    shown = repr(value) if error["type"] == "string_pattern_mismatch" else _shown(field, value)
    return f"{shown} is not allowed; allowed: {_allowed_values(field)}"


def _shown(field: FieldInfo, value: object) -> str:
    """The refused value as YAML spells it; a string only where a number or flag goes."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, str) and field.annotation not in _KINDS:
        return "a string"
    if isinstance(value, dict | list | tuple):
        return "a mapping" if isinstance(value, dict) else "a list"
    return repr(value)


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

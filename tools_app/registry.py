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

from common.settings_config import synthorg_config
from tools_app.builtin.base import BuiltinTool
from tools_app.contracts import ToolContract, ToolRegistry, compile_schema
from trust_app.policy import ToolView, name_key

# Modules whose `TOOLS` tuple holds the built-in tools, in listing order.
BUILTIN_TOOL_MODULES: tuple[str, ...] = ()

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
def tool_catalog() -> ToolCatalog:
    """Every tool this process can run, validated once."""
    config = synthorg_config()
    registry = ToolRegistry(action_types=config.action_types())
    implementations: dict[str, BuiltinTool] = {}
    modules = (*BUILTIN_TOOL_MODULES, *settings.SYNTHORG_EXTRA_TOOL_MODULES)
    for module_name in modules:
        for tool in _module_tools(module_name):
            contract = registry.register(tool.contract)
            implementations[name_key(contract.name)] = tool
    return ToolCatalog(registry=registry, implementations=implementations)


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

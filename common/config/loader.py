"""Load and validate the YAML config file.

A missing file means the seed defaults. Duplicate keys are refused (YAML would
otherwise keep the last one silently), and every problem is reported at once,
each naming the file, the field path and the allowed values.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from common.config.errors import ConfigError, ConfigProblem, problems_from
from common.config.model import SynthOrgConfig
from common.vocabulary.action_types import (
    DEFAULT_ACTION_TYPES,
    ActionTypeError,
    ActionTypeRegistry,
    check_action_type_syntax,
)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with the same key twice."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _custom_action_types(data: Mapping[str, Any]) -> ActionTypeRegistry:
    # Well-formed custom types are registered before the rest is checked, so
    # they can be used anywhere in the file; malformed ones are reported by
    # the model validation itself.
    section = data.get("tool_access")
    declared = section.get("custom_action_types") if isinstance(section, Mapping) else None
    if not isinstance(declared, list | tuple):
        return DEFAULT_ACTION_TYPES
    valid = []
    for item in declared:
        try:
            valid.append(check_action_type_syntax(item) if isinstance(item, str) else None)
        except ActionTypeError:
            continue
    return DEFAULT_ACTION_TYPES.with_custom(v for v in valid if v)


def parse_config(
    data: object, *, source: str = "<config>", base_dir: Path | None = None
) -> SynthOrgConfig:
    """Validate already-parsed config data; raise ``ConfigError`` listing every problem.
    Files the config names (a connection's OpenAPI document) are relative to
    ``base_dir``."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            source, (ConfigProblem("", "the top level must be a mapping of sections"),)
        )
    registry = _custom_action_types(data)
    try:
        return SynthOrgConfig.model_validate(
            dict(data), context={"action_types": registry, "config_dir": base_dir}
        )
    except ValidationError as exc:
        raise ConfigError(source, problems_from(exc)) from exc


def load_config(path: str | Path) -> SynthOrgConfig:
    """Load the config at ``path``; the seed defaults when the file does not exist."""
    file = Path(path)
    source = str(file)
    if not file.exists():
        return SynthOrgConfig()
    try:
        text = file.read_text(encoding="utf-8")
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, (ConfigProblem("", f"{where}invalid YAML: {problem}"),)) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, (ConfigProblem("", f"cannot read the file: {exc}"),)) from exc
    return parse_config(data, source=source, base_dir=file.resolve().parent)

"""Does an approval rule (or rate limit) match a call? Tool globs, action types, arguments.

Pure: plain values in, booleans out. A condition that cannot be evaluated (the
argument is missing or of the wrong kind) does not hold, so the rule does not
match and the next rule, then the autonomy preset, decides.
"""

from __future__ import annotations

import fnmatch
import math
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from common.config.approval import ApprovalMatch, ArgumentCondition
from trust_app.policy.action_types import action_type_matches
from trust_app.policy.names import name_key

_MISSING = object()


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the approval policy knows about one call."""

    agent: str
    autonomy: str
    tool: str
    category: str
    action_type: str
    safety_class: str
    arguments: Mapping[str, Any]


def argument_value(arguments: Mapping[str, Any], field: str) -> Any:
    """The value at dotted ``field`` in ``arguments``, or a private missing marker."""
    value: Any = arguments
    for part in field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _host(value: str) -> str:
    text = value.strip()
    if "://" in text:
        try:
            return (urlsplit(text).hostname or "").rstrip(".").lower()
        except ValueError:
            return ""
    return text.split(":", 1)[0].rstrip(".").lower()


def _path(value: str) -> str:
    # Normalised so "a/../b" and "./b" cannot slip past a pattern written for "b".
    return posixpath.normpath(value) if value else value


def condition_holds(condition: ArgumentCondition, arguments: Mapping[str, Any]) -> bool:
    """True when the argument named by ``condition`` passes its test."""
    value = argument_value(arguments, condition.field)
    if value is _MISSING:
        return False
    if condition.above is not None:
        number = _number(value)
        return number is not None and number > condition.above
    if not isinstance(value, str) or "\x00" in value:
        return False
    if condition.path is not None:
        return fnmatch.fnmatchcase(_path(value), condition.path)
    if condition.host is not None:
        host = _host(value)
        return bool(host) and fnmatch.fnmatchcase(host, condition.host.lower())
    return False


def tool_glob_matches(pattern: str, tool: str) -> bool:
    """Case- and whitespace-folded glob over tool names (``git_*``, ``*_file``)."""
    return fnmatch.fnmatchcase(name_key(tool), name_key(pattern))


def match_holds(match: ApprovalMatch, facts: CallFacts) -> bool:
    """True when ``match`` covers the call: its selector and every argument condition."""
    if match.tool is not None and not tool_glob_matches(match.tool, facts.tool):
        return False
    if match.action_type is not None and not action_type_matches(
        match.action_type, facts.action_type
    ):
        return False
    if match.category is not None and match.category.value != facts.category:
        return False
    return all(condition_holds(c, facts.arguments) for c in match.arguments)


def match_label(match: ApprovalMatch) -> str:
    """A short description of what ``match`` selects, for traces."""
    if match.tool is not None:
        what = f"tool {match.tool}"
    elif match.action_type is not None:
        what = f"action type {match.action_type}"
    else:
        what = f"category {match.category.value if match.category else '?'}"
    for c in match.arguments:
        if c.above is not None:
            what += f", {c.field} > {c.above:g}"
        elif c.path is not None:
            what += f", {c.field} path {c.path}"
        else:
            what += f", {c.field} host {c.host}"
    return what

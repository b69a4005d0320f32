"""Does an approval rule (or rate limit) match a call? Tool globs, action types, arguments.

Pure: plain values in, plain values out. Argument conditions are tested on the
normalised readings of the value (``readings``): the same paths and hosts the
permission policy checks. A condition that cannot be evaluated (the argument is
missing, of the wrong type, or malformed) fails closed: a restrictive rule
(deny, ask people, a rate limit) matches it, a permissive one (auto-approve,
budget) does not. A restrictive rule also matches when any reading of the value
matches; a permissive one only when every reading does.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from approvals_app.policy.readings import (
    MISSING,
    Readings,
    argument_value,
    host_value_readings,
    number_value,
    path_value_readings,
    unjudged_reason,
)
from common.config.approval import ApprovalMatch, ArgumentCondition
from common.vocabulary.action_types import action_type_matches
from common.vocabulary.names import name_key

__all__ = [
    "CallFacts",
    "ConditionTest",
    "MatchResult",
    "argument_value",
    "condition_holds",
    "condition_test",
    "match_holds",
    "match_label",
    "match_result",
    "tool_glob_matches",
]


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the approval policy knows about one call.

    ``argument_roles`` (argument → ``path``/``url``/``host``/``command``, from the
    tool contract) and ``workspace_roots`` (the agent's workspace, as given and as
    resolved) let grants read arguments the way the permission policy does.
    """

    agent: str
    autonomy: str
    tool: str
    category: str
    action_type: str
    safety_class: str
    arguments: Mapping[str, Any]
    argument_roles: Mapping[str, str] = field(default_factory=dict)
    workspace_roots: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ConditionTest:
    """One condition against one call: does any reading pass, does every one, or why not judged."""

    any_pass: bool
    all_pass: bool
    unjudged: str | None = None

    def holds(self, *, restrictive: bool) -> bool:
        """Restrictive: unjudged or any reading passes. Permissive: judged and all pass."""
        if self.unjudged is not None:
            return restrictive
        return self.any_pass if restrictive else self.all_pass


def _globbed(readings: Readings | None, glob: str, field: str, value: Any) -> ConditionTest:
    if readings is None:
        return ConditionTest(False, False, unjudged_reason(field, value))
    passes = [fnmatch.fnmatchcase(r, glob) for r in readings]
    return ConditionTest(any(passes), all(passes))


def condition_test(condition: ArgumentCondition, facts: CallFacts) -> ConditionTest:
    """Test ``condition`` on the call's normalised argument."""
    value = argument_value(facts.arguments, condition.field)
    if value is MISSING:
        return ConditionTest(False, False, unjudged_reason(condition.field, value))
    if condition.above is not None:
        number = number_value(value)
        if number is None:
            return ConditionTest(False, False, unjudged_reason(condition.field, value))
        passed = number > condition.above
        return ConditionTest(passed, passed)
    if condition.path is not None:
        readings = path_value_readings(value, facts.workspace_roots)
        return _globbed(readings, condition.path, condition.field, value)
    assert condition.host is not None  # the config model guarantees exactly one test
    readings = host_value_readings(value)
    return _globbed(readings, condition.host.lower(), condition.field, value)


def condition_holds(condition: ArgumentCondition, facts: CallFacts, *, restrictive: bool) -> bool:
    """True when the condition holds for a rule of that kind (see the module doc)."""
    return condition_test(condition, facts).holds(restrictive=restrictive)


@dataclass(frozen=True, slots=True)
class MatchResult:
    """Whether a rule matched, and the conditions it could not judge (for the trace)."""

    matched: bool
    unjudged: tuple[str, ...] = ()


def tool_glob_matches(pattern: str, tool: str) -> bool:
    """Case- and whitespace-folded glob over tool names (``git_*``, ``*_file``)."""
    return fnmatch.fnmatchcase(name_key(tool), name_key(pattern))


def match_result(match: ApprovalMatch, facts: CallFacts, *, restrictive: bool) -> MatchResult:
    """Does ``match`` cover the call: its selector and every argument condition.

    ``restrictive`` says what the rule does (deny, ask, rate-limit: True;
    auto-approve, budget: False), which decides how unjudged conditions count.
    """
    if match.tool is not None and not tool_glob_matches(match.tool, facts.tool):
        return MatchResult(False)
    if match.action_type is not None and not action_type_matches(
        match.action_type, facts.action_type
    ):
        return MatchResult(False)
    if match.category is not None and match.category.value != facts.category:
        return MatchResult(False)
    unjudged: list[str] = []
    for condition in match.arguments:
        test = condition_test(condition, facts)
        if not test.holds(restrictive=restrictive):
            return MatchResult(False, (test.unjudged,) if test.unjudged else ())
        if test.unjudged is not None:
            unjudged.append(test.unjudged)
    return MatchResult(True, tuple(unjudged))


def match_holds(match: ApprovalMatch, facts: CallFacts, *, restrictive: bool) -> bool:
    """``match_result(...).matched``."""
    return match_result(match, facts, restrictive=restrictive).matched


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

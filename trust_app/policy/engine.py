"""The decision engine: may this agent call this tool with these arguments?

Resolution, first match wins:
    denied list > allowed list > custom-deny > the level's categories > deny.
A tool granted by the allowed list or the level's categories must still pass
every sub-constraint (and, when arguments are given, every argument check).
A category where the agent has earned less trust than its configured level
is decided with the stricter policy of the two (``AgentPolicy.for_category``).
Then approval: the level's ``requires_approval`` action types need one human,
safety class ``financial`` one, ``privileged`` two distinct humans.

Both functions are pure: no I/O beyond the optional path resolver.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Final

from common.vocabulary.categories import ALL_CATEGORIES, SafetyClass
from trust_app.policy.agent import AgentPolicy
from trust_app.policy.constraints import argument_violation, static_verdict
from trust_app.policy.decision import Decision, Outcome, Rule
from trust_app.policy.tool_view import ToolListing, ToolView

_KNOWN_CATEGORIES: Final = frozenset(ALL_CATEGORIES)
FINANCIAL_APPROVALS: Final = 1
PRIVILEGED_APPROVALS: Final = 2
REQUIRES_APPROVAL_APPROVALS: Final = 1


def _deny(rule: str, reason: str, trace: list[str]) -> Decision:
    trace.append(f"{rule}: deny")
    return Decision(Outcome.DENY, reason, rule, tuple(trace))


def _grant(agent: AgentPolicy, tool: ToolView, trace: list[str]) -> Decision | str:
    """Run the resolution order; return the granting rule, or a deny Decision."""
    if not tool.enabled:
        return _deny(Rule.TOOL_DISABLED, f"tool {tool.name!r} is disabled by an admin", trace)
    if tool.category not in _KNOWN_CATEGORIES:
        return _deny(
            Rule.UNKNOWN_CATEGORY,
            f"tool {tool.name!r} has unknown category {tool.category!r}",
            trace,
        )
    if tool.key in agent.denied_keys or tool.skeleton in agent.denied_skeletons:
        return _deny(
            Rule.DENIED_LIST,
            f"tool {tool.name!r} is on this agent's denied list and cannot be used; "
            "choose another tool",
            trace,
        )
    trace.append("denied list: not listed")
    if tool.key in agent.allowed_keys:
        trace.append("allowed list: listed, granted")
        return Rule.ALLOWED_LIST
    trace.append("allowed list: not listed")
    if tool.category in agent.categories:
        trace.append(f"level {agent.level}: category {tool.category} permitted, granted")
        return Rule.LEVEL_CATEGORIES
    if agent.is_custom:
        return _deny(
            Rule.CUSTOM_DENY,
            f"the custom level grants only listed tools and {tool.name!r} is not on this "
            "agent's allowed list; ask an admin to add it",
            trace,
        )
    permitted = ", ".join(sorted(agent.categories))
    return _deny(
        Rule.DEFAULT_DENY,
        f"level {agent.level} does not permit category {tool.category} (it permits "
        f"{permitted}); ask an admin for access or use a permitted tool",
        trace,
    )


def _approval(agent: AgentPolicy, tool: ToolView, granted_by: str, trace: list[str]) -> Decision:
    required = 0
    rule = granted_by
    reasons: list[str] = []
    pattern = agent.approval_patterns.match(tool.action_type)
    if pattern is not None:
        required, rule = REQUIRES_APPROVAL_APPROVALS, Rule.REQUIRES_APPROVAL
        reasons.append(f"level {agent.level} requires approval for {pattern}")
        trace.append(f"requires_approval: {tool.action_type} matches {pattern}")
    if tool.safety_class == SafetyClass.FINANCIAL and required < FINANCIAL_APPROVALS:
        required, rule = FINANCIAL_APPROVALS, Rule.SAFETY_FINANCIAL
        reasons.append("financial tools need a human's approval")
        trace.append("safety class financial: 1 approval")
    if tool.safety_class == SafetyClass.PRIVILEGED:
        required, rule = PRIVILEGED_APPROVALS, Rule.SAFETY_PRIVILEGED
        reasons.append("privileged tools need two distinct humans' approval")
        trace.append("safety class privileged: 2 approvals")
    if required:
        trace.append(f"{rule}: require_approval ({required})")
        reason = "; ".join(reasons) + "; the call waits for an operator's decision"
        return Decision(Outcome.REQUIRE_APPROVAL, reason, rule, tuple(trace), required)
    trace.append(f"{granted_by}: allow")
    return Decision(Outcome.ALLOW, f"permitted by {granted_by}", granted_by, tuple(trace))


def decide(
    agent: AgentPolicy, tool: ToolView, arguments: Mapping[str, object] | None = None
) -> Decision:
    """Decide whether ``agent`` may call ``tool`` with ``arguments``.

    With ``arguments=None`` only the tool itself is judged (as for listing);
    argument checks need the actual arguments.
    """
    trace = [
        f"agent {agent.name!r} at level {agent.level}; tool {tool.name!r} "
        f"({tool.category}, {tool.action_type}, {tool.safety_class})"
    ]
    scoped = agent.for_category(tool.category)
    if scoped is not agent:
        trace.append(
            f"trust: {tool.category} earned at level {scoped.level}, below the configured "
            f"{agent.level}; deciding at {scoped.level}"
        )
        agent = scoped
    granted = _grant(agent, tool, trace)
    if isinstance(granted, Decision):
        return _with_trust_hint(agent, granted)
    violation, lines = static_verdict(agent, tool)
    trace.extend(lines)
    if violation is None and arguments is not None:
        if not isinstance(arguments, Mapping):
            return _deny(Rule.INVALID_ARGUMENTS, "arguments must be a JSON object", trace)
        violation = argument_violation(agent, tool, arguments, trace)
    if violation is not None:
        return _with_trust_hint(agent, _deny(violation[0], violation[1], trace))
    return _approval(agent, tool, granted, trace)


def _with_trust_hint(agent: AgentPolicy, decision: Decision) -> Decision:
    """A denial at a level lowered by trust says how the agent can get the access back."""
    if agent.ceiling is None or not decision.denied:
        return decision
    hint = (
        f"; this agent has earned level {agent.level} here (configured {agent.ceiling}): "
        "access grows as it completes work without errors"
    )
    return replace(decision, reason=decision.reason + hint)


def permitted_without_arguments(agent: AgentPolicy, tool: ToolView) -> bool:
    """Same verdict as ``not decide(agent, tool).denied``, without building the trace."""
    if not tool.enabled or tool.category not in _KNOWN_CATEGORIES:
        return False
    agent = agent.for_category(tool.category)
    if tool.key in agent.denied_keys or tool.skeleton in agent.denied_skeletons:
        return False
    if tool.key not in agent.allowed_keys and tool.category not in agent.categories:
        return False
    return static_verdict(agent, tool)[0] is None


def list_permitted(agent: AgentPolicy, tools: Iterable[ToolView]) -> list[ToolListing]:
    """L1 entries of the tools whose argument-free decision is not deny, in input order."""
    return [tool.entry for tool in tools if permitted_without_arguments(agent, tool)]

"""Can a call run at all? Asked before it is routed, so people only decide calls that can.

Three checks the worker would otherwise make only after people approved:

- an upstream MCP tool (category ``mcp``) must stand on its pinned definition: one
  held (changed since it was pinned, or flagged by the scan) or rejected by an
  admin is refused with the pin's reason, and so is one never reviewed;
- the tool's own settings (``preflight`` on the implementation, when it has one:
  e.g. ``shell_command`` with a command string where command strings are
  switched off): refused for every call, since the worker would refuse it too;
- a tool's ``gate`` (when it has one), which judges the call against the agent's
  sub-constraints and the tool's own config: it may refuse it, or ask a person
  for it (``external_data_request``: an ungranted connection or operation is
  refused, a write or sensitive operation asks);
- the sandbox backend of the tool's category, as the workers last probed it:
  a call that would wait for people is refused while its backend is reported
  down (a call allowed outright goes to the queue and fails there with the same
  reason, so no one waits for it).

Each answer is a ``Decision`` to record, with the reason and a trace line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import structlog

from common.platform.heartbeat import SANDBOX_PROBE_PREFIX
from common.platform.redis import redis_client
from common.settings_config import synthorg_config
from tools_app.bridge.definitions import CATEGORY as BRIDGE_CATEGORY
from tools_app.bridge.pinning import RULE_HELD as RULE_UPSTREAM_HELD
from tools_app.bridge.pinning import upstream_standing
from tools_app.builtin.base import ToolRefusedError
from tools_app.contracts import ToolContract
from tools_app.registry import backend_for, tool_catalog
from trust_app.models import Agent
from trust_app.policy import AgentPolicy, Decision, Outcome
from trust_app.selectors.agents import agent_policy

log = structlog.get_logger(__name__)

RULE_TOOL_SETTINGS = "tool_settings"
RULE_SANDBOX_UNAVAILABLE = "sandbox_unavailable"


def _refused(decision: Decision, rule: str, reason: str) -> Decision:
    return Decision(Outcome.DENY, reason, rule, (*decision.trace, f"{rule}: {reason}"))


def preflight_refusal(
    *,
    contract: ToolContract,
    arguments: Mapping[str, Any],
    decision: Decision,
    agent: Agent | None = None,
    policy: AgentPolicy | None = None,
) -> Decision | None:
    """A denial when the tool's settings refuse these arguments whatever people decide;
    with ``agent``, the tool's gate may also deny the call or ask a person for it, under
    ``policy`` (default: the agent's own; a preview passes candidate settings)."""
    held = upstream_refusal(contract=contract, decision=decision)
    if held is not None:
        return held
    tool = tool_catalog().implementation(contract.name)
    gate = getattr(tool, "gate", None)
    if gate is not None and agent is not None:
        scoped = (policy or agent_policy(agent)).for_category(contract.category.value)
        gated: Decision | None = gate(
            arguments=arguments,
            sub_constraints=scoped.constraints.model_dump(mode="json"),
            decision=decision,
        )
        if gated is not None:
            return gated
    check = getattr(tool, "preflight", None)
    if check is None:
        return None
    settings = synthorg_config().tool_settings(contract.name).model_dump(exclude_none=True)
    try:
        check(settings, arguments)
    except ToolRefusedError as exc:
        return _refused(
            decision,
            RULE_TOOL_SETTINGS,
            f"{exc.reason} (refused before asking anyone: {contract.name} would refuse it "
            "when run)",
        )
    return None


def upstream_refusal(*, contract: ToolContract, decision: Decision) -> Decision | None:
    """A denial when an upstream MCP tool is not on its pinned, reviewed definition."""
    if contract.category.value != BRIDGE_CATEGORY:
        return None
    standing = upstream_standing(contract.name)
    if standing.available:
        return None
    return _refused(decision, RULE_UPSTREAM_HELD, standing.reason)


def sandbox_refusal(*, contract: ToolContract, decision: Decision) -> Decision | None:
    """A denial when the workers report the tool's sandbox backend as unable to run.

    A backend no worker has reported yet is not refused here: the call waits in the
    queue, and the worker that takes it refuses it if the backend cannot run.
    """
    backend = backend_for(contract)
    try:
        raw = redis_client().get(SANDBOX_PROBE_PREFIX + backend)
        probe = json.loads(raw) if raw is not None else None
    except Exception as exc:  # the worker checks again; asking people is what is at stake
        log.warning("sandbox_probe_unreadable", backend=backend, error=str(exc))
        return None
    if not isinstance(probe, dict) or probe.get("ok") is not False:
        return None
    why = str(probe.get("reason") or "no reason given")
    return _refused(
        decision,
        RULE_SANDBOX_UNAVAILABLE,
        f"the {backend} sandbox that runs {contract.category.value} tools cannot run here "
        f"({why}), so nobody is asked to approve a call that could not run; call again once "
        "it is back",
    )

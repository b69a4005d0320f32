"""An agent's recent calls decided again under other settings, writing nothing.

A permission preview asks what a candidate change would have done to the agent's calls
of the last days (``SYNTHORG_PERMISSION_REPLAY_DAYS``, the newest
``SYNTHORG_PERMISSION_REPLAY_CALLS`` at most). Each recorded call is decided by the steps
a live call goes through, with the same code: permission and sub-constraints
(``trust_app.policy.decide``), the tool's settings and gate (``preflight_refusal``), and
the approval route (``approval_desk().replay_router``), under the settings given (the
trust the agent has earned now applies to each). Only the settings differ between the
current and the candidate verdicts, so a change counted is the edit's own
(``trust_app.policy.replay``). Rate windows are not counted and the sandbox's health is
not asked: neither depends on what an admin edits here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

from django.utils import timezone

from audit_app.subjects import call_subjects
from tools_app.approval_desk import CallRouter, approval_desk
from tools_app.contracts import ToolContract
from tools_app.decision import call_contract, unplaced
from tools_app.models import Invocation
from tools_app.registry import tool_catalog, tool_view
from tools_app.selectors.invocations import disabled_tool_keys
from tools_app.services.runnable import preflight_refusal
from trust_app.models import Agent
from trust_app.policy import AgentPolicy, Decision, Outcome, decide, name_key
from trust_app.policy.replay import CallReplay, ReplayedCall, ReplayTally

# Rows read from the database at a time: arguments may be large, memory stays flat.
CHUNK_ROWS = 500


@dataclass(frozen=True)
class DecidingSettings:
    """One way of deciding a call: the permission policy and the autonomy preset."""

    policy: AgentPolicy
    autonomy: str


def call_verdict(
    *,
    agent: Agent,
    contract: ToolContract,
    arguments: Mapping[str, Any],
    digest: str,
    settings: DecidingSettings,
    router: CallRouter,
    enabled: bool = True,
) -> Decision:
    """How ``settings`` decide this call: its action type, permission, the tool's settings,
    the route."""
    contract, unresolved = call_contract(contract, arguments)
    decision = unplaced(
        decide(settings.policy, tool_view(contract, enabled=enabled), arguments), unresolved
    )
    if not decision.denied:
        decision = (
            preflight_refusal(
                contract=contract,
                arguments=arguments,
                decision=decision,
                agent=agent,
                policy=settings.policy,
            )
            or decision
        )
    if decision.denied:
        return decision
    return router(
        contract=contract,
        decision=decision,
        arguments=arguments,
        digest=digest,
        autonomy=settings.autonomy,
    )


def _target(category: str, arguments: Any) -> str:
    """What the call acted on, as the audit search names it (secrets redacted)."""
    if not isinstance(arguments, Mapping):
        return ""
    subjects = call_subjects(category, arguments)
    return f"{subjects[0][0].value} {subjects[0][1]}" if subjects else ""


def _outcome(decision: Any) -> Outcome | None:
    try:
        return Outcome(str(decision.get("outcome"))) if isinstance(decision, Mapping) else None
    except ValueError:
        return None


def calls_replay(
    *,
    agent: Agent,
    current: DecidingSettings,
    candidate: DecidingSettings,
    unheld: DecidingSettings | None = None,
    held_at: str = "",
    days: int,
    limit: int,
) -> CallReplay:
    """The agent's calls of the last ``days`` (the newest ``limit``) decided again with the
    ``current`` and the ``candidate`` settings, and with ``unheld`` (the candidate without
    trust's hold, when trust holds the agent at ``held_at``), tallied against then."""
    since = timezone.now() - timedelta(days=days)
    rows = (
        Invocation.objects.filter(agent=agent, created_at__gte=since)
        .order_by("-created_at", "-id")
        .values_list(
            "id", "tool", "category", "arguments", "arguments_redacted", "arguments_hash",
            "decision", "created_at",
        )[: limit + 1]
    )  # fmt: skip
    tally = ReplayTally(days=days, limit=limit, held_at=held_at)
    router = approval_desk().replay_router(agent=agent)
    catalog = tool_catalog()
    disabled = disabled_tool_keys()
    seen = 0
    capped = False
    for call_id, tool, category, arguments, shown, digest, recorded, made in rows.iterator(
        chunk_size=CHUNK_ROWS
    ):
        if seen == limit:
            capped = True
            break
        seen += 1
        contract = catalog.contract(tool)
        then = _outcome(recorded)
        if contract is None or then is None or not isinstance(arguments, Mapping):
            tally.add_undecidable()  # a tool this console no longer knows
            continue
        verdict = partial(
            call_verdict,
            agent=agent,
            contract=contract,
            arguments=arguments,
            digest=digest,
            router=router,
            enabled=name_key(contract.name) not in disabled,
        )
        now = verdict(settings=current)
        new = verdict(settings=candidate)
        tally.add(
            ReplayedCall(
                invocation_id=str(call_id),
                tool=tool,
                target=_target(category, shown),
                then=then,
                now=now.outcome,
                candidate=new.outcome,
                reason=new.reason,
                unheld=verdict(settings=unheld).outcome if unheld is not None else None,
                at=f"{made:%Y-%m-%d %H:%M:%S} UTC",
            )
        )
    return tally.result(capped=capped)

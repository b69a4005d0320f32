"""The decision-time hook both messaging tools share: refuse, or ask a person, or pass."""

from __future__ import annotations

from dataclasses import replace

from tools_app.builtin.communication.messages import RULE_ASKS, MessageRefusedError
from trust_app.policy import Decision, Outcome


def refused(decision: Decision, exc: MessageRefusedError) -> Decision:
    return Decision(Outcome.DENY, exc.reason, exc.rule, (*decision.trace, f"{exc.rule}: deny"))


def judged(decision: Decision, line: str, *, asks: bool) -> Decision:
    """``decision`` with ``line`` in its trace; when ``asks``, one person's approval at
    least, as a floor the approval rules cannot lower."""
    if not asks:
        return replace(decision, trace=(*decision.trace, line))
    trace = (*decision.trace, f"{line}: a person decides")
    if decision.outcome is Outcome.REQUIRE_APPROVAL:
        return replace(
            decision,
            reason=f"{decision.reason}; {line}",
            trace=trace,
            required_approvals=max(decision.required_approvals, 1),
        )
    return Decision(
        Outcome.REQUIRE_APPROVAL,
        f"{line}, which needs a person's approval; the call waits for an operator's decision",
        RULE_ASKS,
        trace,
        1,
    )

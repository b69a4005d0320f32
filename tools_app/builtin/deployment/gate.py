"""The decision-time hook the deployment tools share: refuse, or ask people, or pass."""

from __future__ import annotations

from dataclasses import replace

from tools_app.builtin.deployment.pipelines import RULE_ASKS, DeployRefusedError
from trust_app.policy import Decision, Outcome


def refused(decision: Decision, reason: str, rule: str) -> Decision:
    return Decision(Outcome.DENY, reason, rule, (*decision.trace, f"{rule}: deny"))


def refused_by(decision: Decision, exc: DeployRefusedError) -> Decision:
    return refused(decision, exc.reason, exc.rule)


def judged(decision: Decision, line: str, *, people: int) -> Decision:
    """``decision`` with ``line`` in its trace; with ``people``, that many distinct
    people's approvals at least: a floor no approval rule or autonomy preset lowers
    (the router keeps a permission decision's approvals as its floor)."""
    if people <= 0:
        return replace(decision, trace=(*decision.trace, line))
    who = "a person decides" if people == 1 else f"{people} distinct people decide"
    trace = (*decision.trace, f"{line}: {who}")
    if decision.outcome is Outcome.REQUIRE_APPROVAL:
        return replace(
            decision,
            reason=f"{decision.reason}; {line}",
            trace=trace,
            required_approvals=max(decision.required_approvals, people),
        )
    needs = "a person's approval" if people == 1 else f"the approval of {people} distinct people"
    return Decision(
        Outcome.REQUIRE_APPROVAL,
        f"{line}, which needs {needs}; the call waits for an operator's decision",
        RULE_ASKS,
        trace,
        people,
    )

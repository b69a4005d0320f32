"""The approval desk: the steps of a call that people own, as tools_app reaches them.

tools_app decides and runs calls; approvals_app asks people. This is the narrow
interface between them. approvals_app registers its implementation when Django starts
(``ApprovalsAppConfig.ready``), so the dependency points one way: approvals -> tools.
A process without a registered desk refuses to route a call (fail closed): it never
runs a call that its policy would have sent to a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from audit_app.record import Actor
    from tools_app.contracts import ToolContract
    from tools_app.models import Invocation
    from trust_app.models import Agent
    from trust_app.policy import Decision


class RoutedCall(Protocol):
    """What step 5 decided: the decision to record and what an approval request needs."""

    @property
    def decision(self) -> Decision: ...

    def decision_data(self) -> dict[str, Any]: ...

    def refused(self, decision: Decision) -> RoutedCall:
        """The same call refused with ``decision`` instead (nothing for people to decide)."""
        ...


class RateRefusal(Protocol):
    """A call over a rate window: the words for the agent and the seconds to wait."""

    @property
    def reason(self) -> str: ...

    @property
    def retry_after(self) -> int: ...

    @property
    def window(self) -> str: ...


class CallRouter(Protocol):
    """Step 5 for past calls of one agent, writing nothing: how the approval policy would
    route each now, with the autonomy given (a replay of the agent's recent calls)."""

    def __call__(
        self,
        *,
        contract: ToolContract,
        decision: Decision,
        arguments: Mapping[str, Any],
        digest: str,
        autonomy: str,
    ) -> Decision: ...


class ApprovalDesk(Protocol):
    def route(
        self,
        *,
        agent: Agent,
        contract: ToolContract,
        decision: Decision,
        arguments: Mapping[str, Any],
        digest: str,
    ) -> RoutedCall:
        """Step 5 (rules, autonomy, budgets, grants), in the caller's transaction."""
        ...

    def rate_limited(
        self, *, agent: Agent, contract: ToolContract, arguments: Mapping[str, Any]
    ) -> RateRefusal | None:
        """Count the call against each configured window; the first one over answers."""
        ...

    def replay_router(self, *, agent: Agent) -> CallRouter:
        """A router for ``agent``'s past calls: no grant's use counted, no budget spent."""
        ...

    def request_open(self, *, invocation: Invocation, routed: RoutedCall) -> Any:
        """Open the request for people's decision, in the caller's transaction."""
        ...

    def withdraw_for_tool(self, *, tool: str, actor: Actor, reason: str, code: str) -> int:
        """Withdraw every pending request for ``tool``; answers how many."""
        ...

    def invocation_cancelled(self, *, invocation_id: Any) -> None:
        """Settle the pending request of a call its agent cancelled, in its transaction."""
        ...


class ApprovalDeskMissingError(RuntimeError):
    """No approval desk is registered: nothing may be routed."""


_desk: ApprovalDesk | None = None


def approval_desk_register(desk: ApprovalDesk) -> None:
    global _desk
    _desk = desk


def approval_desk() -> ApprovalDesk:
    if _desk is None:
        raise ApprovalDeskMissingError(
            "no approval desk is registered (approvals_app is not installed): "
            "calls cannot be routed"
        )
    return _desk

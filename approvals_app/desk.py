"""approvals_app's side of the approval desk (tools_app.approval_desk), registered at start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from approvals_app.events import approval_change_on_commit
from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.services import (
    RateRefusal,
    Routed,
    approval_rate_limited,
    approval_request_open,
    approval_route,
)
from approvals_app.services.route_replay import ReplayRouter
from approvals_app.services.withdraw import approvals_withdraw_for_tool
from audit_app.record import Actor
from common.inbox import ApprovalChange
from tools_app.approval_desk import RoutedCall
from tools_app.contracts import ToolContract
from tools_app.models import Invocation
from trust_app.models import Agent
from trust_app.policy import Decision


class PeopleDesk:
    """The approval desk of this console: its policy, requests, grants and inbox."""

    def route(
        self,
        *,
        agent: Agent,
        contract: ToolContract,
        decision: Decision,
        arguments: Mapping[str, Any],
        digest: str,
    ) -> Routed:
        return approval_route(
            agent=agent, contract=contract, decision=decision, arguments=arguments, digest=digest
        )

    def rate_limited(
        self, *, agent: Agent, contract: ToolContract, arguments: Mapping[str, Any]
    ) -> RateRefusal | None:
        return approval_rate_limited(agent=agent, contract=contract, arguments=arguments)

    def replay_router(self, *, agent: Agent) -> ReplayRouter:
        return ReplayRouter(agent)

    def request_open(self, *, invocation: Invocation, routed: RoutedCall) -> ApprovalRequest:
        assert isinstance(routed, Routed)
        return approval_request_open(invocation=invocation, routed=routed)

    def withdraw_for_tool(self, *, tool: str, actor: Actor, reason: str, code: str) -> int:
        return approvals_withdraw_for_tool(tool=tool, actor=actor, reason=reason, code=code)

    def invocation_cancelled(self, *, invocation_id: Any) -> None:
        pending = ApprovalRequest.objects.filter(
            invocation_id=invocation_id, status=ApprovalStatus.PENDING
        )
        for request_id in list(pending.values_list("id", flat=True)):
            # The operators' inbox drops the request as soon as the agent withdraws it.
            approval_change_on_commit(request_id, ApprovalChange.SETTLED)
        pending.update(status=ApprovalStatus.CANCELLED, decided_at=timezone.now())

"""Many pending approval requests at once, for tests of the inbox under a flood.

One call is submitted through the real pipeline (decided, routed, recorded); the rest are
written in bulk as copies of it with their own arguments (hash and all), as the pipeline
would have recorded them, without a thousand submissions.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from approvals_app.models import ApprovalRequest, ApprovalStatus
from common.canonical import arguments_hash
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_submit import CallRequest, invocation_submit

Arguments = Callable[[int], dict[str, Any]]


def submitted(agent: Any, tool: str, arguments: dict[str, Any]) -> ApprovalRequest:
    """One call through the pipeline; it must wait for a person."""
    invocation = invocation_submit(
        agent=agent, call=CallRequest(tool=tool, arguments=arguments)
    ).invocation
    assert invocation.status == InvocationStatus.PENDING_APPROVAL, invocation.decision
    return ApprovalRequest.objects.select_related("invocation").get(invocation=invocation)


def pending_like(template: ApprovalRequest, count: int, arguments: Arguments) -> list[str]:
    """``count`` more pending requests like ``template`` (same agent, tool and rule), the
    n-th with ``arguments(n)``, each due a millisecond after the one before; their ids."""
    source = template.invocation
    invocations, requests = [], []
    for n in range(count):
        given = arguments(n)
        invocation = Invocation(
            id=uuid.uuid4(),
            agent_id=source.agent_id,
            tool=source.tool,
            definition_hash=source.definition_hash,
            category=source.category,
            action_type=source.action_type,
            safety_class=source.safety_class,
            arguments=given,
            arguments_redacted=given,
            arguments_hash=arguments_hash(given),
            status=InvocationStatus.PENDING_APPROVAL,
            decision=source.decision,
            backend=source.backend,
            queue=source.queue,
        )
        invocations.append(invocation)
        requests.append(
            ApprovalRequest(
                id=uuid.uuid4(),
                invocation=invocation,
                status=ApprovalStatus.PENDING,
                arguments_hash=invocation.arguments_hash,
                required_approvals=template.required_approvals,
                risk_tier=template.risk_tier,
                reason=template.reason,
                rule=template.rule,
                expires_at=template.expires_at + timedelta(milliseconds=n + 1),
                owner_may_approve=template.owner_may_approve,
                on_expiry=template.on_expiry,
            )
        )
    Invocation.objects.bulk_create(invocations, batch_size=500)
    ApprovalRequest.objects.bulk_create(requests, batch_size=500)
    return [str(r.id) for r in requests]

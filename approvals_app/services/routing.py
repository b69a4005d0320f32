"""Step 4 of a call inside the submit transaction: route, count budgets, open the request.

``approval_route`` builds the plain facts, lets the pure policy decide, and
answers what ``invocation_submit`` records. Budgets are counted in the database
under a lock on the agent's row, so two concurrent calls never spend one slot
twice. Rate limits (``approval.rate_limits`` and ``tools.<name>.max_calls_per_minute``)
are sliding windows in Redis, checked before anything is recorded
(``approval_rate_limited``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from approvals_app.cards.workspace import current_file_size
from approvals_app.events import approval_change_on_commit
from approvals_app.models import ApprovalGrant, ApprovalRequest
from approvals_app.policy import (
    BudgetQuery,
    CallFacts,
    GrantView,
    Route,
    expiry_of,
    rate_windows,
    route,
)
from approvals_app.policy.risk import FILE_TOOLS, RiskInput, TargetState, effect_risk
from approvals_app.policy.risk_words import Risk, most_serious
from approvals_app.selectors.facts import call_facts
from approvals_app.selectors.habits import agent_habits
from approvals_app.selectors.previews import call_previews
from approvals_app.selectors.requests import approval_grants_live
from approvals_app.services.previews import worker_previews_on_commit, worker_previews_pending
from common.config.notifications import NotificationEvent
from common.inbox import ApprovalChange
from common.settings_config import synthorg_config
from notifications_app.services import notifications_queue
from tools_app.contracts import ToolContract
from tools_app.models import Invocation
from trust_app.models import Agent
from trust_app.policy import Decision


@dataclass(frozen=True)
class Routed:
    """The final decision to record, and what an approval request needs (``facts``: the
    call as the policy read it, for the risk of its request)."""

    route: Route
    facts: CallFacts | None = None

    @property
    def decision(self) -> Decision:
        return self.route.decision

    def decision_data(self) -> dict[str, Any]:
        """The decision as stored on the invocation; a budgeted call carries its budget key."""
        data = self.route.decision.as_dict()
        if self.route.budget_key:
            data["budget"] = self.route.budget_key
        if self.route.grant_id:
            data["grant"] = self.route.grant_id
        return data

    def refused(self, decision: Decision) -> Routed:
        """The same call refused with ``decision``: no grant used, no budget counted."""
        return Routed(
            replace(self.route, decision=decision, grant_id=None, budget_key=None), self.facts
        )


def live_grant_views(agent: Agent, tool: str, now: datetime) -> Sequence[GrantView]:
    return [
        GrantView(
            id=str(g.id),
            tool=g.tool,
            granted_by=g.granted_by_name,
            arguments_hash=g.arguments_hash or None,
            pattern=g.pattern or {},
        )
        for g in approval_grants_live(agent=agent, tool=tool, now=now).order_by("created_at")
    ]


def approval_route(
    *,
    agent: Agent,
    contract: ToolContract,
    decision: Decision,
    arguments: Mapping[str, Any],
    digest: str,
    now: datetime | None = None,
) -> Routed:
    """Route the permission decision; must run inside the transaction that records the call."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("approval_route must run inside the transaction that records the call")
    now = now or timezone.now()
    config = synthorg_config()
    locked = False

    def budget_used(query: BudgetQuery) -> int:
        nonlocal locked
        if not locked:
            # Serialise this agent's budget checks until the call is recorded. FOR NO KEY
            # UPDATE, not FOR UPDATE: the latter also blocks the key-share lock each insert
            # referencing the agent takes (an audit row, written under the chain's lock),
            # and two such submissions deadlock.
            mine = Agent.objects.select_for_update(no_key=True).filter(id=agent.id)
            mine.values_list("id").first()
            locked = True
        return Invocation.objects.filter(
            agent=agent, created_at__gte=query.since, decision__budget=query.key
        ).count()

    facts = call_facts(agent, contract, arguments)
    routed = route(
        facts=facts,
        base=decision,
        approval=config.approval,
        autonomy=config.autonomy,
        now=now,
        digest=digest,
        budget_used=budget_used,
        grants=lambda: live_grant_views(agent, contract.name, now),
    )
    if routed.grant_id:
        ApprovalGrant.objects.filter(id=routed.grant_id).update(uses=F("uses") + 1)
    return Routed(routed, facts)


def approval_route_now(
    *,
    agent: Agent,
    contract: ToolContract,
    decision: Decision,
    arguments: Mapping[str, Any],
    digest: str,
    excluding: Any = None,
    grants: Callable[[datetime], Sequence[GrantView]] | None = None,
) -> Route:
    """How the approval policy would route this call now, writing nothing: no grant's
    use counted, no budget locked (a pending call re-decided; ``excluding``: its id).
    ``grants``: the agent's live grants for the tool at a time, when the caller has
    read them already."""
    now = timezone.now()
    config = synthorg_config()

    def budget_used(query: BudgetQuery) -> int:
        spent = Invocation.objects.filter(
            agent=agent, created_at__gte=query.since, decision__budget=query.key
        )
        return spent.exclude(id=excluding).count() if excluding is not None else spent.count()

    return route(
        facts=call_facts(agent, contract, arguments),
        base=decision,
        approval=config.approval,
        autonomy=config.autonomy,
        now=now,
        digest=digest,
        budget_used=budget_used,
        grants=(lambda: grants(now))
        if grants
        else (lambda: live_grant_views(agent, contract.name, now)),
    )


def _call_risk(invocation: Invocation, routed: Routed) -> Risk:
    """What the call does, judged now: against the agent's habits and the file it names."""
    facts = routed.facts
    if facts is None:
        facts = CallFacts(
            agent=invocation.agent.name,
            autonomy=invocation.agent.autonomy,
            tool=invocation.tool,
            category=invocation.category,
            action_type=invocation.action_type,
            safety_class=invocation.safety_class,
            arguments=invocation.arguments,
        )
    habits = agent_habits(
        invocation.agent, workspace_roots=facts.workspace_roots, excluding=invocation.id
    )
    target = TargetState()
    if invocation.tool in FILE_TOOLS and invocation.agent.workspace:
        found = current_file_size(invocation.agent.workspace, facts.arguments.get("path"))
        if found.status != "unreadable":
            target = TargetState(exists=found.status == "read", size=found.size)
    return effect_risk(RiskInput(facts, habits, target, routed.route.rule_tier, routed.route.rule))


def approval_request_open(*, invocation: Invocation, routed: Routed) -> ApprovalRequest:
    """Open the approval request of a call that waits for people (in the submit transaction).

    Its risk label is the effect's; how long it waits, and whether timing out may
    approve it, follow the more serious of that label and the policy's own tier, so a
    call the policy asks two people about never times out into an approval. Its
    consequence previews (what the call would touch, looked at without doing it) are
    stored beside the risk, a ``git_push``'s or ``git_commit``'s once a worker has read
    it; one that fails
    says so and never stops the request.
    """
    config = synthorg_config()
    decision = routed.decision
    risk = _call_risk(invocation, routed)
    ttl, on_expiry = expiry_of(
        config.approval,
        most_serious(risk.tier, routed.route.risk_tier),
        settings.SYNTHORG_APPROVAL_TTL_SECONDS,
    )
    request = ApprovalRequest.objects.create(
        invocation=invocation,
        arguments_hash=invocation.arguments_hash,
        required_approvals=max(decision.required_approvals, 1),
        risk_tier=risk.tier,
        risk_reasons=risk.as_data(),
        previews=[
            *call_previews(invocation),
            *worker_previews_pending(invocation, now=timezone.now()),
        ],
        reason=decision.reason,
        rule=decision.rule,
        expires_at=invocation.created_at + timedelta(seconds=ttl),
        owner_may_approve=routed.route.owner_may_approve,
        on_expiry=on_expiry,
    )
    approval_change_on_commit(request.id, ApprovalChange.NEW, request=request)
    notifications_queue(request, NotificationEvent.NEW)
    worker_previews_on_commit(request)
    return request


@dataclass(frozen=True)
class RateRefusal:
    """A call over a rate limit: the words for the agent and the seconds to wait."""

    reason: str
    retry_after: int
    window: str


def approval_rate_limited(
    *, agent: Agent, contract: ToolContract, arguments: Mapping[str, Any]
) -> RateRefusal | None:
    """Count the call against every configured window; the first one over answers."""
    from tools_app.ratelimit import rate_limit_hit

    config = synthorg_config()
    facts = call_facts(agent, contract, arguments)
    per_minute = config.tool_settings(contract.name).max_calls_per_minute
    for window in rate_windows(facts, str(agent.id), config.approval, per_minute):
        wait = rate_limit_hit(window.key, limit=window.limit, window_seconds=window.window_seconds)
        if wait:
            seconds = f"{window.window_seconds:g}"
            return RateRefusal(
                reason=(
                    f"rate limit: at most {window.limit} calls per {seconds}s for "
                    f"{window.label}; retry in {wait}s"
                ),
                retry_after=max(1, math.ceil(wait)),
                window=window.key,
            )
    return None

"""Step 5 for many past calls of one agent at once, writing nothing (a replay).

A permission preview decides an agent's recent calls again under candidate settings.
Each call is routed by the same pure policy (``approvals_app.policy.route``) as a live
call, with the autonomy the candidate names, against the grants and budgets as they
stand now: no grant's use is counted, no budget is locked or spent, and each tool's
grants and each budget's use are read once for the whole replay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.utils import timezone

from approvals_app.policy import BudgetQuery, GrantView, route
from approvals_app.services.routing import call_facts, live_grant_views
from common.settings_config import synthorg_config
from tools_app.contracts import ToolContract
from tools_app.models import Invocation
from trust_app.models import Agent
from trust_app.policy import Decision, name_key


class ReplayRouter:
    """Routes calls of ``agent`` as the approval policy would now, with a given autonomy."""

    def __init__(self, agent: Agent, now: datetime | None = None) -> None:
        self._agent = agent
        self._now = now or timezone.now()
        self._config = synthorg_config()
        self._grants: dict[str, Sequence[GrantView]] = {}
        self._budgets: dict[tuple[str, datetime], int] = {}

    def _budget_used(self, query: BudgetQuery) -> int:
        key = (query.key, query.since)
        if key not in self._budgets:
            self._budgets[key] = Invocation.objects.filter(
                agent=self._agent, created_at__gte=query.since, decision__budget=query.key
            ).count()
        return self._budgets[key]

    def _grant_list(self, tool: str) -> Sequence[GrantView]:
        key = name_key(tool)
        if key not in self._grants:
            self._grants[key] = list(live_grant_views(self._agent, tool, self._now))
        return self._grants[key]

    def __call__(
        self,
        *,
        contract: ToolContract,
        decision: Decision,
        arguments: Mapping[str, Any],
        digest: str,
        autonomy: str,
    ) -> Decision:
        facts = replace(call_facts(self._agent, contract, arguments), autonomy=autonomy)
        return route(
            facts=facts,
            base=decision,
            approval=self._config.approval,
            autonomy=self._config.autonomy,
            now=self._now,
            digest=digest,
            budget_used=self._budget_used,
            grants=lambda: self._grant_list(contract.name),
        ).decision

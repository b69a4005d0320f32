"""Pure approval policy: rules, autonomy presets, budgets, rate limits, grants, quorum.

No Django here: services load rows, build the plain values, call ``route`` and
write what it returns.
"""

from approvals_app.policy.grants import GrantView, covering_grant, grant_covers
from approvals_app.policy.matching import (
    CallFacts,
    condition_holds,
    match_holds,
    match_result,
)
from approvals_app.policy.route import (
    BudgetQuery,
    RateWindow,
    Route,
    expiry_of,
    period_start,
    rate_windows,
    risk_tier,
    route,
    rule_name,
)

__all__ = [
    "BudgetQuery",
    "CallFacts",
    "GrantView",
    "RateWindow",
    "Route",
    "condition_holds",
    "covering_grant",
    "expiry_of",
    "grant_covers",
    "match_holds",
    "match_result",
    "period_start",
    "rate_windows",
    "risk_tier",
    "route",
    "rule_name",
]

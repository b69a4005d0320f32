"""The only writers of approval requests, decisions and grants (see each module)."""

from approvals_app.services.decide import Decided, approval_decide
from approvals_app.services.decide_each import EachOutcome, approvals_decide_each
from approvals_app.services.expiry import (
    approval_cancel,
    approval_escalate,
    approval_expire,
    approvals_escalate_due,
    approvals_expire_due,
)
from approvals_app.services.grants import GrantSpec, approval_grant_create, approval_grant_revoke
from approvals_app.services.routing import (
    RateRefusal,
    Routed,
    approval_rate_limited,
    approval_request_open,
    approval_route,
)

__all__ = [
    "Decided",
    "EachOutcome",
    "GrantSpec",
    "RateRefusal",
    "Routed",
    "approval_cancel",
    "approval_decide",
    "approval_escalate",
    "approval_expire",
    "approval_grant_create",
    "approval_grant_revoke",
    "approval_rate_limited",
    "approval_request_open",
    "approval_route",
    "approvals_decide_each",
    "approvals_escalate_due",
    "approvals_expire_due",
]

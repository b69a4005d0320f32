"""HTML fragments for the live inbox: what a page shows on load, on reconnect and on a change.

Everything is read from the database at the moment of rendering, so a browser
that reconnects gets the current state, never a replay of the socket.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone

from approvals_app.models import ApprovalRequest, ApprovalStatus
from approvals_app.selectors import (
    approval_grants,
    approval_request,
    approvals_pending_by_risk,
    approvals_pending_count,
)
from common.roles import ROLES_THAT_DECIDE, Role, has_any_role, roles_of

TEMPLATE = "approvals/inbox.html"
INBOX_VIEW = "inbox"


def can_decide(user: Any) -> bool:
    """True for signed-in operators and admins."""
    return has_any_role(user, ROLES_THAT_DECIDE)


def _viewer(user: Any) -> dict[str, Any]:
    return {"viewer": user, "viewer_is_admin": Role.ADMIN in roles_of(user), "now": timezone.now()}


def inbox_context(user: Any) -> dict[str, Any]:
    """Everything the inbox page renders."""
    return {
        **_viewer(user),
        "groups": approvals_pending_by_risk(),
        "pending_count": approvals_pending_count(),
        "grants": list(approval_grants()[:100]),
    }


def pending_count_html(*, oob: bool = True) -> str:
    """The navigation's pending count, as an out-of-band swap."""
    return render_to_string(
        f"{TEMPLATE}#pending-count", {"pending_count": approvals_pending_count(), "oob": oob}
    )


def row_html(request: ApprovalRequest, user: Any, *, oob: str = "") -> str:
    """One request's row (pending or settled) for ``user``."""
    return render_to_string(f"{TEMPLATE}#row", {**_viewer(user), "request": request, "oob": oob})


def resync_html(user: Any, view: str) -> str:
    """What a socket sends on (re)connect: the count, and the whole inbox on its page."""
    parts = [pending_count_html()]
    if view == INBOX_VIEW:
        parts.append(render_to_string(f"{TEMPLATE}#inbox", {**inbox_context(user), "oob": True}))
    return "".join(parts)


def change_html(user: Any, view: str, request_id: str, change: str) -> str:
    """What a socket sends when request ``request_id`` changed."""
    parts = [pending_count_html()]
    if view != INBOX_VIEW:
        return parts[0]
    request = approval_request(request_id)
    if request is None:
        return parts[0]
    if change == "new" and request.status == ApprovalStatus.PENDING:
        parts.append(row_html(request, user, oob=f"beforeend:#risk-{request.risk_tier}"))
    else:
        parts.append(row_html(request, user, oob="true"))
    return "".join(parts)

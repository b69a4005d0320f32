"""The operators' inbox at /approvals/ and its form posts (decide one or many, revoke a grant).

Views translate form fields into service calls and render what came back.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from approvals_app.live import (
    TEMPLATE,
    can_decide,
    inbox_context,
    pending_count_html,
    promotion_row_html,
    row_html,
)
from approvals_app.selectors.requests import approval_request, promotion_request
from approvals_app.services import GrantSpec, approval_decide, approval_grant_revoke
from common.errors import SynthOrgError
from common.page_access import page_for

BATCH_MAX = 100


def _decider(request: HttpRequest) -> Any:
    if not can_decide(request.user):
        raise PermissionDenied("the approvals inbox is for operators and admins")
    return request.user


@page_for()
@require_GET
def inbox(request: HttpRequest) -> HttpResponse:
    """The live inbox: pending requests grouped by risk, kept current over the socket."""
    user = _decider(request)
    return render(request, TEMPLATE, inbox_context(user))


@dataclass
class Outcome:
    request_id: str
    tool: str
    ok: bool
    message: str
    field: str = ""  # the form field the refusal is about, shown beside it


def _ids(request: HttpRequest) -> list[str]:
    only = request.POST.get("only")
    ids = [only] if only else request.POST.getlist("ids")
    valid = []
    for value in ids[:BATCH_MAX]:
        try:
            valid.append(str(uuid.UUID(value)))
        except ValueError:
            continue
    return valid


def _remember(request: HttpRequest, request_id: str) -> GrantSpec | None:
    minutes = request.POST.get(f"remember-{request_id}", "")
    return GrantSpec(minutes=int(minutes)) if minutes.isdigit() else None


@page_for()
@require_POST
def decide(request: HttpRequest) -> HttpResponse:
    """Approve or deny the selected requests (or the one named by ``only``)."""
    user = _decider(request)
    decision = request.POST.get("decision", "")
    shared_reason = request.POST.get("reason", "")
    outcomes: list[Outcome] = []
    rows: list[str] = []
    for request_id in _ids(request):
        found = approval_request(request_id)
        tool = found.invocation.tool if found else "?"
        try:
            approval_decide(
                request=request_id,
                person=user,
                decision=decision,
                reason=request.POST.get(f"reason-{request_id}") or shared_reason,
                arguments_hash=request.POST.get(f"hash-{request_id}") or None,
                remember=_remember(request, request_id) if decision == "approve" else None,
            )
            verb = "approved" if decision == "approve" else "denied"
            outcomes.append(Outcome(request_id, tool, True, f"you {verb} it"))
        except SynthOrgError as exc:
            outcomes.append(
                Outcome(request_id, tool, False, exc.message, str(exc.details.get("field", "")))
            )
        current = approval_request(request_id)
        if current is not None:
            rows.append(row_html(current, user, oob="true"))
    if not outcomes:
        outcomes.append(Outcome("", "", False, "select at least one request"))
    feedback = render(request, f"{TEMPLATE}#feedback", {"outcomes": outcomes}).content.decode()
    return HttpResponse(feedback + "".join(rows) + pending_count_html())


@page_for()
@require_POST
def promotion_decide_inbox(request: HttpRequest) -> HttpResponse:
    """Approve or deny one promotion request (``only``) from the inbox."""
    from trust_app.services.promotion import promotion_decide

    user = _decider(request)
    ids = _ids(request)
    decision = request.POST.get("decision", "")
    outcomes: list[Outcome] = []
    rows: list[str] = []
    for promotion_id in ids[:1]:
        found = promotion_request(promotion_id)
        if found is None:
            outcomes.append(Outcome(promotion_id, "promotion", False, "no such promotion request"))
            continue
        what = f"promotion of {found.agent.name} to {found.to_level} on {found.track}"
        reason = (request.POST.get(f"reason-{promotion_id}") or "").strip()
        if decision == "approve" and not reason:
            reason = "approved in the inbox"
        try:
            promotion_decide(request=found, person=user, decision=decision, reason=reason)
            verb = "approved" if decision == "approve" else "denied"
            outcomes.append(Outcome(promotion_id, what, True, f"you {verb} it"))
        except SynthOrgError as exc:
            outcomes.append(
                Outcome(promotion_id, what, False, exc.message, str(exc.details.get("field", "")))
            )
        current = promotion_request(promotion_id)
        if current is not None:
            rows.append(promotion_row_html(current, user, oob="true"))
    if not outcomes:
        outcomes.append(Outcome("", "", False, "select a promotion request"))
    feedback = render(request, f"{TEMPLATE}#feedback", {"outcomes": outcomes}).content.decode()
    return HttpResponse(feedback + "".join(rows) + pending_count_html())


@page_for()
@require_POST
def grant_revoke(request: HttpRequest, grant_id: uuid.UUID) -> HttpResponse:
    """Revoke a standing grant; answers the grant's row."""
    user = _decider(request)
    try:
        grant = approval_grant_revoke(grant=grant_id, person=user)
    except SynthOrgError as exc:
        return HttpResponse(f'<li class="grant error">{exc.message}</li>')
    return render(request, f"{TEMPLATE}#grant", {"grant": grant})

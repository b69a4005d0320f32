"""The admins' review of upstream MCP tools: each server's state (with the tail of a
failed stdio server's standard error), held definitions, their diff and findings."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from common.errors import InvalidArgumentError, SynthOrgError
from common.page_access import page_for
from common.roles import Role
from tools_app.bridge.pinning import upstream_pin_accept, upstream_pin_reject
from tools_app.bridge.selectors import (
    upstream_pin_findings,
    upstream_pins_for_review,
    upstream_servers,
)

TEMPLATE = "tools/upstream.html"


def _page(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = {
        "reviews": upstream_pins_for_review(),
        "servers": upstream_servers(),
        "errors": {},
        "typed": {},
        **extra,
    }
    return render(request, TEMPLATE, context, status=status)


@page_for(Role.ADMIN, organisation_wide=True)
def upstream_review(request: HttpRequest) -> HttpResponse:
    """Held and flagged upstream tools, with the change and the findings, to accept or reject."""
    return _page(request)


@page_for(Role.ADMIN, organisation_wide=True)
@require_POST
def upstream_decide(request: HttpRequest, pin_id: int) -> HttpResponse:
    """Accept or reject the held definition of one upstream tool (audited with the reason)."""
    decision = request.POST.get("decision", "")
    reason = request.POST.get("reason", "")
    expected = request.POST.get("expected_hash", "")
    decide = {"accept": upstream_pin_accept, "reject": upstream_pin_reject}.get(decision)
    try:
        if decide is None:
            raise SynthOrgError(f"decision: {decision!r} is not one of accept, reject")
        if decision == "accept":
            _findings_confirmed(pin_id, request.POST.get("accept_findings", ""), expected)
        pin = decide(pin_id=pin_id, person=request.user, expected_hash=expected, reason=reason)
    except SynthOrgError as exc:
        # Shown beside the form the admin used, with what they typed kept.
        return _page(
            request,
            status=exc.http_status,
            errors={pin_id: exc.message},
            typed={pin_id: reason},
        )
    verb = "accepted: it is pinned and can be called" if decision == "accept" else "rejected"
    messages.success(request, f"The definition of {pin.contract_name} was {verb}.")
    return redirect("upstream-review")


def _findings_confirmed(pin_id: int, confirmed: str, expected_hash: str) -> None:
    """Accepting a definition the scan flagged takes a second, explicit step: the box
    naming its findings, ticked for this very definition (its hash), so one click on
    Accept never approves a finding nobody read."""
    findings = upstream_pin_findings(pin_id)
    if findings and (not confirmed or confirmed != expected_hash):
        named = "; ".join(
            f"{f.get('severity', '')} {f.get('reason', '')} ({f.get('code', '')})".strip()
            for f in findings
        )
        raise InvalidArgumentError(
            f"accept_findings: this definition has findings ({named}); tick the box that "
            "names them to accept it despite them, or reject it",
            details={"field": "accept_findings"},
        )

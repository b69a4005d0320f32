"""The audit chain's status on the audit pages, and verification on request."""

from __future__ import annotations

import contextlib

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from audit_app.chain import AuditKeyError
from audit_app.selectors.browse import audit_chain_status
from audit_app.services.verification import audit_verification_request
from audit_app.views.events import AUDIT_ROLES
from common.page_access import page_for


@require_POST
@page_for(*AUDIT_ROLES)
def audit_verify(request: HttpRequest) -> HttpResponse:
    """Queue a verification of the whole chain; the status panel follows its progress."""
    # Refused when nothing can be recorded (no key, an unkeyed log): the panel says why.
    with contextlib.suppress(AuditKeyError):
        audit_verification_request(person=request.user)
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "audit/_chain_status.html", {"chain": audit_chain_status()})
    return redirect("audit-list")


@require_GET
@page_for(*AUDIT_ROLES)
def audit_chain_status_panel(request: HttpRequest) -> HttpResponse:
    """The status panel alone (polled while a verification runs)."""
    return render(request, "audit/_chain_status.html", {"chain": audit_chain_status()})

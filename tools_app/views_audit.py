"""Audit pages for auditors and admins: the log, one event, one call's timeline, exports."""

from __future__ import annotations

import uuid

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils import timezone

from common.errors import InvalidArgumentError
from common.roles import Role
from tools_app.audit_export import csv_lines, jsonl_lines, streamed
from tools_app.selectors_audit import (
    EXACT_FILTERS,
    AuditFilters,
    audit_event_get,
    audit_filters_parse,
    audit_page,
    audit_page_query,
    cursor_parse,
    event_output,
    invocation_timeline,
    page_size_parse,
)
from trust_app.views_access import is_auditor, page_for

AUDIT_ROLES = (Role.AUDITOR, Role.ADMIN)


def _filters_or_error(request: HttpRequest) -> tuple[AuditFilters, str]:
    """The request's filters; a malformed one becomes a message and no filter at all."""
    try:
        return audit_filters_parse(request.GET), ""
    except InvalidArgumentError as exc:
        return AuditFilters(), exc.message


@page_for(*AUDIT_ROLES)
def audit_list(request: HttpRequest) -> HttpResponse:
    """The audit log, newest first, filtered, a keyset page at a time."""
    filters, problem = _filters_or_error(request)
    try:
        cursor = cursor_parse(request.GET.get("cursor"))
        size = page_size_parse(request.GET.get("limit"))
    except InvalidArgumentError as exc:
        cursor, size, problem = None, page_size_parse(None), exc.message
    page = audit_page(filters, cursor=cursor, size=size)
    query = audit_page_query(filters, None)
    context = {
        "filters": filters,
        "problem": problem,
        "page": page,
        "first_page": cursor is None,
        "next_query": (
            audit_page_query(filters, page.next_cursor, size) if page.next_cursor else None
        ),
        "query": query,
        "filter_names": list(EXACT_FILTERS),
    }
    status = 400 if problem else 200
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "audit/list.html#results", context, status=status)
    return render(request, "audit/list.html", context, status=status)


@page_for(*AUDIT_ROLES)
def audit_event(request: HttpRequest, event_id: int) -> HttpResponse:
    """One event: its fields, the decision trace and output of its call, and the call's timeline."""
    event = audit_event_get(event_id)
    if event is None:
        raise Http404(f"no audit event #{event_id}")
    output = event_output(event, with_raw=is_auditor(request))
    timeline = invocation_timeline(event.invocation_id) if event.invocation_id else []
    return render(
        request,
        "audit/event.html",
        {"event": event, "output": output, "timeline": timeline},
    )


@page_for(*AUDIT_ROLES)
def audit_invocation(request: HttpRequest, invocation_id: uuid.UUID) -> HttpResponse:
    """Every event of one call, in order."""
    timeline = invocation_timeline(invocation_id)
    if not timeline:
        raise Http404(f"no audit events for invocation {invocation_id}")
    return render(
        request,
        "audit/invocation.html",
        {"invocation_id": invocation_id, "timeline": timeline},
    )


def _export(request: HttpRequest, fmt: str) -> HttpResponseBase:
    try:
        filters = audit_filters_parse(request.GET)
    except InvalidArgumentError as exc:
        return HttpResponse(exc.message + "\n", status=400, content_type="text/plain")
    lines = csv_lines(filters) if fmt == "csv" else jsonl_lines(filters)
    content_type = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(streamed(request, lines), content_type=content_type)
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.{fmt}"'
    response["Cache-Control"] = "no-store"
    return response


@page_for(*AUDIT_ROLES)
def audit_export_csv(request: HttpRequest) -> HttpResponseBase:
    """Every matching event as CSV, streamed."""
    return _export(request, "csv")


@page_for(*AUDIT_ROLES)
def audit_export_jsonl(request: HttpRequest) -> HttpResponseBase:
    """Every matching event as JSON Lines, streamed."""
    return _export(request, "jsonl")

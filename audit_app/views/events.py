"""Audit pages for auditors and admins: the log, one event, one call's timeline, exports."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils import timezone
from django.utils.http import urlencode

from audit_app.export import csv_lines, jsonl_lines, streamed
from audit_app.scope import (
    audit_agents_of,
    audit_choices_of,
    audit_event_readable,
    audit_filters_for,
    audit_invocation_readable,
)
from audit_app.selectors.browse import (
    audit_chain_status,
    audit_event_neighbours,
    audit_filter_choices,
    audit_filters_check_known,
    audit_has_newer,
    audit_has_older,
    audit_match_count,
    audit_newer_page,
)
from audit_app.selectors.events import (
    EXACT_FILTERS,
    PAGE_SIZE_DEFAULT,
    SUBJECT_EXPECTED,
    SUBJECT_FILTERS,
    AuditFilters,
    audit_event_get,
    audit_filters_parse,
    audit_page,
    audit_page_query,
    audit_subject_counts,
    cursor_parse,
    event_output,
    invocation_timeline,
    invocation_told,
    page_size_parse,
)
from audit_app.selectors.story import call_story
from common.envelope import error_document
from common.errors import InvalidArgumentError
from common.page_access import is_auditor, page_for
from common.roles import Role

AUDIT_ROLES = (Role.AUDITOR, Role.ADMIN)
EXPORT_UNPAGED = ("cursor", "newer", "limit")


@page_for(*AUDIT_ROLES)
def audit_list(request: HttpRequest) -> HttpResponse:
    """The audit log, newest first, filtered, a keyset page at a time (older or newer).

    A filter that cannot be read is a form error on its field (400), and no events are
    shown: never a list that looks filtered and is not.
    """
    filters, problem, problem_field = AuditFilters(), "", ""
    cursor = newer = None
    size = PAGE_SIZE_DEFAULT
    try:
        filters = audit_filters_for(request.user, audit_filters_parse(request.GET))
        cursor = cursor_parse(request.GET.get("cursor"))
        newer = cursor_parse(request.GET.get("newer"), "newer")
        size = page_size_parse(request.GET.get("limit"))
        audit_filters_check_known(filters)
    except InvalidArgumentError as exc:
        problem, problem_field = exc.message, str(exc.details.get("field", ""))
    events: list[Any] = []
    older_query = newer_query = None
    count = None
    matched: list[Any] = []
    if not problem:  # a refused filter shows its error, never a misleading empty list
        if newer is not None:
            events, _ = audit_newer_page(filters, newer_than=newer, size=size)
        else:
            events = audit_page(filters, cursor=cursor, size=size).events
        if events and audit_has_older(filters, events[-1].id):
            older_query = audit_page_query(filters, events[-1].id, size)
        if (
            (cursor is not None or newer is not None)
            and events
            and audit_has_newer(filters, events[0].id)
        ):
            newer_query = _newer_query(filters, events[0].id, size)
        count = audit_match_count(filters)
        matched = audit_subject_counts(filters) if filters.subjects else []
    context = {
        "filters": filters,
        "problem": problem,
        "problem_field": problem_field,
        # What was typed, shown again in the form beside its error.
        "typed": {
            name: request.GET.get(name, "") for name in ("q", *EXACT_FILTERS, *SUBJECT_FILTERS)
        }
        if problem
        else {},
        "events": events,
        "count": count,
        "matched": matched,
        "first_page": cursor is None and newer is None,
        "next_query": older_query,
        "newer_query": newer_query,
        "query": audit_page_query(filters, None),
        "filter_names": list(EXACT_FILTERS),
        "subject_filters": [(name, SUBJECT_EXPECTED[name]) for name in SUBJECT_FILTERS],
        "choices": _choices(request),
        "chain": audit_chain_status(),
    }
    status = 400 if problem else 200
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "audit/list.html#results", context, status=status)
    return render(request, "audit/list.html", context, status=status)


def _choices(request: HttpRequest) -> Mapping[str, list[str]]:
    """The filters' values, among the events the person reads."""
    own = audit_choices_of(request.user)
    return audit_filter_choices() if own is None else own


def _newer_query(filters: AuditFilters, newer_than: int, size: int) -> str:
    query = filters.as_query()
    query["newer"] = str(newer_than)
    if size != PAGE_SIZE_DEFAULT:
        query["limit"] = str(size)
    return urlencode(query)


@page_for(*AUDIT_ROLES)
def audit_event(request: HttpRequest, event_id: int) -> HttpResponse:
    """One event: its fields, the decision trace and output of its call, and the call's timeline."""
    event = audit_event_get(event_id)
    if event is None or not audit_event_readable(request.user, event):
        raise Http404(f"no audit event #{event_id} among your teams' events")
    output = event_output(event, with_raw=is_auditor(request))
    timeline = invocation_timeline(event.invocation_id) if event.invocation_id else []
    previous_id, next_id = audit_event_neighbours(event.id, agents=audit_agents_of(request.user))
    return render(
        request,
        "audit/event.html",
        {
            "event": event,
            "output": output,
            "timeline": timeline,
            "previous_id": previous_id,
            "next_id": next_id,
            "chain": audit_chain_status(),
        },
    )


@page_for(*AUDIT_ROLES)
def audit_invocation(request: HttpRequest, invocation_id: uuid.UUID) -> HttpResponse:
    """One call as a story (asked, decided, by whom, result, effects), then every event."""
    story = call_story(invocation_id)
    if story is None or not audit_invocation_readable(request.user, invocation_id):
        raise Http404(f"no audit events for invocation {invocation_id}")
    return render(
        request,
        "audit/invocation.html",
        {
            "invocation_id": invocation_id,
            "invocation": invocation_told(invocation_id),
            "story": story,
            "timeline": story.timeline,
        },
    )


def _export(request: HttpRequest, fmt: str) -> HttpResponseBase:
    try:
        filters = audit_filters_for(request.user, audit_filters_parse(request.GET))
        paged = next((name for name in EXPORT_UNPAGED if name in request.GET), None)
        if paged is not None:
            # An export taking `limit=10` for its size would hold less than it seems to.
            raise InvalidArgumentError(
                f"{paged}: an export holds every matching event and takes no page "
                "parameters; expected only filters",
                details={"field": paged, "expected": "only filters"},
            )
    except InvalidArgumentError as exc:
        # A script downloads exports: the refusal is the API's error envelope.
        return JsonResponse(error_document(exc.code, exc.message, exc.details), status=400)
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

"""GET /api/v1/audit/events/: the audit log for auditors and admins, a page at a time."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app.models import AuditEvent
from audit_app.scope import audit_filters_for
from audit_app.selectors.events import (
    EXACT_FILTERS,
    FILTER_MAX_LENGTH,
    HOST_PATTERN,
    PAGE_SIZE_MAX,
    SUBJECT_EXPECTED,
    TEXT_PATTERN,
    audit_filters_parse,
    audit_page,
    audit_page_query,
    audit_subject_counts,
    cursor_parse,
    page_size_parse,
)
from common import openapi
from common.roles import Role
from trust_app.api.people import PersonView, roles_required


def audit_event_representation(event: AuditEvent) -> dict[str, Any]:
    """One event as the API shows it (every chained field, plus the chain hashes)."""
    return {
        "id": event.id,
        "created_at": event.created_at.isoformat(),
        "kind": event.kind,
        "actor": {"type": event.actor_type, "id": event.actor_id, "name": event.actor_name},
        "agent": {"id": str(event.agent_id), "name": event.agent_name} if event.agent_id else None,
        "invocation_id": str(event.invocation_id) if event.invocation_id else None,
        "tool": event.tool,
        "category": event.category,
        "action_type": event.action_type,
        "arguments_hash": event.arguments_hash,
        "outcome": event.outcome,
        "status": event.status,
        "reason": event.reason,
        "rule": event.rule,
        "duration_ms": event.duration_ms,
        "request_id": event.request_id,
        "data": event.data,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }


_FILTER_TEXT = {"type": "string", "maxLength": FILTER_MAX_LENGTH, "pattern": TEXT_PATTERN}
_HOST_TEXT = {"type": "string", "maxLength": FILTER_MAX_LENGTH, "pattern": HOST_PATTERN}
_PARAMETERS = [
    *(OpenApiParameter(name, _FILTER_TEXT) for name in EXACT_FILTERS),
    OpenApiParameter("q", _FILTER_TEXT, description="words in the reason"),
    OpenApiParameter("invocation", OpenApiTypes.UUID),
    *(
        OpenApiParameter(
            name,
            _HOST_TEXT if name == "host" else _FILTER_TEXT,
            description=f"events of calls whose arguments name {expected}",
        )
        for name, expected in SUBJECT_EXPECTED.items()
    ),
    OpenApiParameter("since", OpenApiTypes.DATETIME, description="not later than `until`"),
    OpenApiParameter("until", OpenApiTypes.DATETIME, description="not earlier than `since`"),
    OpenApiParameter(
        "cursor",
        {"type": "string", "pattern": "^[1-9][0-9]{0,17}$"},
        description="from the `next` link",
    ),
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": PAGE_SIZE_MAX},
        description=f"1 to {PAGE_SIZE_MAX}, default 50",
    ),
]


class AuditEventListView(PersonView, APIView):
    permission_classes = [roles_required(Role.AUDITOR, Role.ADMIN)]

    @extend_schema(
        summary="Audit events, newest first, with keyset pagination",
        parameters=_PARAMETERS,
        responses={200: openapi.AUDIT_PAGE},
    )
    def get(self, request: Request) -> Response:
        filters = audit_filters_for(request.user, audit_filters_parse(request.query_params))
        size = page_size_parse(request.query_params.get("limit"))
        cursor = cursor_parse(request.query_params.get("cursor"))
        page = audit_page(filters, cursor=cursor, size=size, with_data=True)
        next_url = None
        if page.next_cursor is not None:
            query = audit_page_query(filters, page.next_cursor, size)
            next_url = request.build_absolute_uri(f"{request.path}?{query}")
        body: dict[str, Any] = {
            "results": [audit_event_representation(e) for e in page.events],
            "next": next_url,
        }
        if filters.subjects:
            # What the argument filters matched, over every page: value, events, calls.
            body["matched"] = [
                {"kind": c.kind, "value": c.value, "events": c.events, "calls": c.calls}
                for c in audit_subject_counts(filters)
            ]
        return Response(body)

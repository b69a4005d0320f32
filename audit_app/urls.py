"""Console pages of audit_app (the API lives in audit_app/api/)."""

from django.urls import path

from audit_app.views import events, pictures, verification

urlpatterns = [
    path("audit/", events.audit_list, name="audit-list"),
    path("audit/export.csv", events.audit_export_csv, name="audit-export-csv"),
    path("audit/export.jsonl", events.audit_export_jsonl, name="audit-export-jsonl"),
    path("audit/<int:event_id>/", events.audit_event, name="audit-event"),
    path(
        "audit/<int:event_id>/picture/",
        pictures.audit_event_picture,
        name="audit-event-picture",
    ),
    path("audit/verify/", verification.audit_verify, name="audit-verify"),
    path(
        "audit/verify/status/",
        verification.audit_chain_status_panel,
        name="audit-chain-status",
    ),
    path(
        "audit/invocations/<uuid:invocation_id>/",
        events.audit_invocation,
        name="audit-invocation",
    ),
]

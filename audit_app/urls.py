"""Console pages of audit_app (the API lives in audit_app/api/)."""

from django.urls import path

from audit_app.views import events as views_audit
from audit_app.views import verification as views_audit_verify

urlpatterns = [
    path("audit/", views_audit.audit_list, name="audit-list"),
    path("audit/export.csv", views_audit.audit_export_csv, name="audit-export-csv"),
    path("audit/export.jsonl", views_audit.audit_export_jsonl, name="audit-export-jsonl"),
    path("audit/<int:event_id>/", views_audit.audit_event, name="audit-event"),
    path("audit/verify/", views_audit_verify.audit_verify, name="audit-verify"),
    path(
        "audit/verify/status/",
        views_audit_verify.audit_chain_status_panel,
        name="audit-chain-status",
    ),
    path(
        "audit/invocations/<uuid:invocation_id>/",
        views_audit.audit_invocation,
        name="audit-invocation",
    ),
]

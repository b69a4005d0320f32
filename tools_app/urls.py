"""Console pages of tools_app (the API lives in tools_app/api/)."""

from django.urls import path

from tools_app import views_audit, views_audit_verify, views_tools
from tools_app.bridge import views as bridge_views

urlpatterns = [
    path("tools/", views_tools.tool_index, name="tool-list"),
    path("tools/upstream/", bridge_views.upstream_review, name="upstream-review"),
    path(
        "tools/upstream/<int:pin_id>/decide/",
        bridge_views.upstream_decide,
        name="upstream-decide",
    ),
    path("tools/<str:name>/switch/", views_tools.tool_switch, name="tool-switch"),
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

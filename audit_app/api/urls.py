from django.urls import path

from audit_app.api import views

urlpatterns = [
    path("audit/events/", views.AuditEventListView.as_view(), name="api-audit-events"),
]

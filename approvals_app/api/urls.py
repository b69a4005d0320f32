from django.urls import path

from approvals_app.api import views

urlpatterns = [
    path("approvals/", views.ApprovalListView.as_view(), name="api-approvals"),
    path(
        "approvals/<uuid:request_id>/",
        views.ApprovalDetailView.as_view(),
        name="api-approval",
    ),
    path(
        "approvals/<uuid:request_id>/decide/",
        views.ApprovalDecideView.as_view(),
        name="api-approval-decide",
    ),
]

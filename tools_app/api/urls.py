from django.urls import path

from tools_app.api import views

urlpatterns = [
    path("me/", views.MeView.as_view(), name="api-me"),
    path("tools/", views.ToolListView.as_view(), name="api-tools"),
    path("tools/<str:name>/", views.ToolDetailView.as_view(), name="api-tool"),
    path(
        "tools/<str:name>/resources/<str:resource_id>/",
        views.ToolResourceView.as_view(),
        name="api-tool-resource",
    ),
    path("invocations/", views.InvocationListCreateView.as_view(), name="api-invocations"),
    path("invocations/batch/", views.InvocationBatchView.as_view(), name="api-invocation-batch"),
    path(
        "invocations/<uuid:invocation_id>/",
        views.InvocationDetailView.as_view(),
        name="api-invocation",
    ),
    path(
        "invocations/<uuid:invocation_id>/cancel/",
        views.InvocationCancelView.as_view(),
        name="api-invocation-cancel",
    ),
]

"""Console pages of tools_app (the API lives in tools_app/api/)."""

from django.urls import path

from tools_app.bridge import views as bridge_views
from tools_app.views import tools as views_tools

urlpatterns = [
    path("tools/", views_tools.tool_index, name="tool-list"),
    path("tools/upstream/", bridge_views.upstream_review, name="upstream-review"),
    path(
        "tools/upstream/<int:pin_id>/decide/",
        bridge_views.upstream_decide,
        name="upstream-decide",
    ),
    path("tools/<str:name>/switch/", views_tools.tool_switch, name="tool-switch"),
]

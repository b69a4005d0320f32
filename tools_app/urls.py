"""Console pages of tools_app (the API lives in tools_app/api/)."""

from django.urls import path

from tools_app.bridge import views as bridge_views
from tools_app.views import connections as views_connections
from tools_app.views import desktop as views_desktop
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
    path("connections/", views_connections.connection_index, name="connection-list"),
    path("agents/<uuid:agent_id>/desktop/", views_desktop.desktop_panel, name="agent-desktop"),
    path(
        "agents/<uuid:agent_id>/desktop/<str:sha256>.png",
        views_desktop.desktop_picture_file,
        name="agent-desktop-picture",
    ),
    path(
        "agents/<uuid:agent_id>/desktop/take-over/",
        views_desktop.desktop_take_over_view,
        name="agent-desktop-take-over",
    ),
    path(
        "agents/<uuid:agent_id>/desktop/hand-back/",
        views_desktop.desktop_hand_back_view,
        name="agent-desktop-hand-back",
    ),
    path(
        "agents/<uuid:agent_id>/desktop/act/",
        views_desktop.desktop_act_view,
        name="agent-desktop-act",
    ),
]

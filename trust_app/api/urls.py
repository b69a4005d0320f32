from django.urls import path

from trust_app.api import views

urlpatterns = [
    path(
        "agents/<uuid:agent_id>/explain/",
        views.AgentExplainView.as_view(),
        name="api-agent-explain",
    ),
]

from django.urls import path

from trust_app.api.views import agents as views
from trust_app.api.views import trust as views_trust

urlpatterns = [
    path(
        "agents/<uuid:agent_id>/explain/",
        views.AgentExplainView.as_view(),
        name="api-agent-explain",
    ),
    path(
        "agents/<uuid:agent_id>/task-outcomes/",
        views_trust.TaskOutcomeView.as_view(),
        name="api-agent-task-outcomes",
    ),
    path(
        "agents/<uuid:agent_id>/trust/",
        views_trust.AgentTrustView.as_view(),
        name="api-agent-trust",
    ),
    path(
        "agents/<uuid:agent_id>/trust/reset/",
        views_trust.AgentTrustResetView.as_view(),
        name="api-agent-trust-reset",
    ),
    path(
        "invocations/<uuid:invocation_id>/feedback/",
        views_trust.InvocationFeedbackView.as_view(),
        name="api-invocation-feedback",
    ),
    path("promotions/", views_trust.PromotionListView.as_view(), name="api-promotions"),
    path(
        "promotions/<uuid:promotion_id>/decide/",
        views_trust.PromotionDecideView.as_view(),
        name="api-promotion-decide",
    ),
]

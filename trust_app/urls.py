"""Console pages of trust_app (the API lives in trust_app/api/)."""

from django.urls import path

from trust_app.views import agents as views_agents
from trust_app.views import tokens as views_tokens
from trust_app.views import trust as views_trust

urlpatterns = [
    path("agents/<uuid:agent_id>/trust/", views_trust.agent_trust_page, name="trust-agent"),
    path(
        "agents/<uuid:agent_id>/trust/reset/",
        views_trust.agent_trust_reset,
        name="trust-agent-reset",
    ),
    path(
        "promotions/<uuid:promotion_id>/decide/",
        views_trust.promotion_decide_page,
        name="trust-promotion-decide",
    ),
    path("agents/", views_agents.agent_index, name="agent-list"),
    path("agents/<uuid:agent_id>/", views_agents.agent_detail, name="agent-detail"),
    path("agents/<uuid:agent_id>/edit/", views_agents.agent_edit, name="agent-edit"),
    path("agents/<uuid:agent_id>/explain/", views_agents.agent_explain_panel, name="agent-explain"),
    path("agents/<uuid:agent_id>/tokens/", views_tokens.agent_token_create, name="agent-tokens"),
    path(
        "agents/<uuid:agent_id>/tokens/new/",
        views_tokens.agent_token_new,
        name="agent-token-new",
    ),
    path(
        "agents/<uuid:agent_id>/tokens/<uuid:token_id>/rotate/",
        views_tokens.agent_token_rotate_view,
        name="agent-token-rotate",
    ),
    path(
        "agents/<uuid:agent_id>/tokens/<uuid:token_id>/revoke/",
        views_tokens.agent_token_revoke_view,
        name="agent-token-revoke",
    ),
]

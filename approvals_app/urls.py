"""Console pages of approvals_app (the API lives in approvals_app/api/)."""

from django.urls import path

from approvals_app.slack import views as slack_views
from approvals_app.views import call as views_call
from approvals_app.views import decisions as views_decisions
from approvals_app.views import inbox as views
from approvals_app.views import pattern as views_pattern
from approvals_app.views import pictures as views_pictures

urlpatterns = [
    path(
        "integrations/slack/<str:channel>/actions/",
        slack_views.slack_actions,
        name="slack-actions",
    ),
    path("approvals/", views.inbox, name="approvals-inbox"),
    path("approvals/more/", views.inbox_more, name="approvals-more"),
    path("approvals/groups/<str:key>/", views.inbox_group, name="approvals-group"),
    path("approvals/select/", views.inbox_select, name="approvals-select"),
    path("decisions/", views_decisions.my_decisions, name="my-decisions"),
    path("approvals/<uuid:request_id>/call/", views_call.whole_call, name="approvals-call"),
    path(
        "approvals/<uuid:request_id>/picture/",
        views_pictures.card_picture,
        name="approvals-picture",
    ),
    path("approvals/decide/", views.decide, name="approvals-decide"),
    path(
        "approvals/<uuid:request_id>/pattern/",
        views_pattern.remember_pattern,
        name="approvals-pattern",
    ),
    path(
        "approvals/promotions/decide/",
        views.promotion_decide_inbox,
        name="approvals-promotion-decide",
    ),
    path(
        "approvals/grants/<uuid:grant_id>/revoke/",
        views.grant_revoke,
        name="approvals-grant-revoke",
    ),
]

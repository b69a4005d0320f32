"""The trust page of one agent: /agents/<id>/trust/ (operators and admins read; admins reset)."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from common.errors import SynthOrgError
from common.page_access import page_for
from common.roles import ROLES_THAT_DECIDE, Role, has_any_role
from common.team_scope import DECIDE, READ_AGENTS
from trust_app.models import Agent, PromotionRequest
from trust_app.selectors.teams import agent_edit_refusal, agent_in_scope, person_scope, team_q
from trust_app.selectors.trust import agent_trust_summary
from trust_app.services.promotion import promotion_decide
from trust_app.services.trust import trust_reset
from trust_app.strategies.score_chart import score_chart

# The page's reset form carries this box; a reset without it is refused (nothing changes).
RESET_CONFIRM_FIELD = "confirm"


def _agent_for(request: HttpRequest, agent_id: uuid.UUID) -> Agent:
    if not has_any_role(request.user, ROLES_THAT_DECIDE):
        raise PermissionDenied("operators and admins only")
    agent = agent_in_scope(agent_id, person_scope(request.user, READ_AGENTS))
    if agent is None:
        raise Http404("no such agent among your teams' agents")
    return agent


@page_for()
def agent_trust_page(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """The trust matrix, evidence, history and chart of one agent."""
    agent = _agent_for(request, agent_id)
    summary = agent_trust_summary(agent)
    context = {
        "agent": agent,
        "summary": summary,
        "chart": score_chart([(p["at"], p["score"]) for p in summary["chart"]]),
        "can_reset": not agent_edit_refusal(request.user, agent),
    }
    return render(request, "trust/agent_trust.html", context)


@page_for()
@require_POST
def agent_trust_reset(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """Admins start an agent's trust over."""
    agent = _agent_for(request, agent_id)
    if request.POST.get(RESET_CONFIRM_FIELD) != "yes":
        if not has_any_role(request.user, {Role.ADMIN}):
            raise PermissionDenied("only admins reset trust")
        messages.error(request, "Trust was not reset: tick the box to confirm starting over.")
        return HttpResponseRedirect(reverse("trust-agent", args=[agent.id]))
    refusal = agent_edit_refusal(request.user, agent)
    if refusal:
        raise PermissionDenied(refusal)
    try:
        trust_reset(agent=agent, person=request.user, reason=request.POST.get("reason", ""))
    except SynthOrgError as exc:
        if exc.http_status == 403:
            raise PermissionDenied(exc.message) from exc
        messages.error(request, exc.message)
    return HttpResponseRedirect(reverse("trust-agent", args=[agent.id]))


@page_for()
@require_POST
def promotion_decide_page(request: HttpRequest, promotion_id: uuid.UUID) -> HttpResponse:
    """Approve or deny a promotion request from the agent's trust page."""
    if not has_any_role(request.user, ROLES_THAT_DECIDE):
        raise PermissionDenied("operators and admins only")
    scope = person_scope(request.user, DECIDE)
    rows = PromotionRequest.objects.filter(team_q(scope, "agent__team_id"))
    promotion = rows.filter(id=promotion_id).first()
    if promotion is None:
        raise Http404("no such promotion request among your teams' requests")
    try:
        promotion_decide(
            request=promotion,
            person=request.user,
            decision=request.POST.get("decision", ""),
            reason=request.POST.get("reason", ""),
        )
    except SynthOrgError as exc:
        if exc.http_status == 403:
            raise PermissionDenied(exc.message) from exc
        messages.error(request, exc.message)
    return HttpResponseRedirect(reverse("trust-agent", args=[promotion.agent_id]))

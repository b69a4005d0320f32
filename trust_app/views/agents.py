"""Agent pages: operators read, admins edit permissions, manage tokens and try calls."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from audit_app.record import Actor
from common.errors import InvalidArgumentError
from common.page_access import is_admin, page_for
from common.roles import Role
from common.team_scope import READ_AGENTS
from tools_app.registry import tool_catalog
from trust_app.forms import (
    AgentFilterForm,
    AgentPermissionsForm,
    ExplainForm,
    TokenForm,
)
from trust_app.models import Agent
from trust_app.selectors.agent_pages import (
    AgentListFilters,
    agent_list,
    agent_recent_invocations,
    agent_tokens,
)
from trust_app.selectors.agents import agent_cap
from trust_app.selectors.teams import agent_edit_refusal, agent_in_scope, person_scope, team_q
from trust_app.services.agents import agent_explain
from trust_app.services.permissions import (
    agent_permissions_effect,
    agent_permissions_replay,
    agent_permissions_state,
    agent_permissions_update,
)

READERS = (Role.OPERATOR, Role.ADMIN)


def _template(request: HttpRequest, partial: str) -> str:
    """The detail page, or only one of its panels when htmx asks."""
    htmx = getattr(request, "htmx", False)
    return f"agents/detail.html#{partial}" if htmx else "agents/detail.html"


def _agent_or_404(request: HttpRequest, agent_id: uuid.UUID, *, edit: bool = False) -> Agent:
    """The agent when one of the person's teams holds it (404 otherwise); with ``edit``,
    403 unless they are an admin of its team or organisation-wide."""
    agent = agent_in_scope(agent_id, person_scope(request.user, READ_AGENTS))
    if agent is None:
        raise Http404(f"no agent {agent_id} among your teams' agents")
    if edit:
        refusal = agent_edit_refusal(request.user, agent)
        if refusal:
            raise PermissionDenied(refusal)
    return agent


def _may_edit(request: HttpRequest, agent: Agent) -> bool:
    return is_admin(request) and not agent_edit_refusal(request.user, agent)


@page_for(*READERS)
def agent_index(request: HttpRequest) -> HttpResponse:
    """Agents with search and filters; each shows its recent denials."""
    form = AgentFilterForm(request.GET or None)
    filters = AgentListFilters()
    if form.is_valid():
        data = form.cleaned_data
        filters = AgentListFilters(
            q=data["q"].strip(),
            level=data["level"],
            autonomy=data["autonomy"],
            active=data["active"],
            denials=data["denials"],
        )
    scope = person_scope(request.user, READ_AGENTS)
    context = {"form": form, "agents": agent_list(filters).filter(team_q(scope))}
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "agents/list.html#results", context)
    return render(request, "agents/list.html", context)


def _detail_context(request: HttpRequest, agent: Agent, **extra: object) -> dict[str, object]:
    state = agent_permissions_state(agent)
    context: dict[str, object] = {
        "agent": agent,
        "state": state,
        # The cap the engine applies: the agent's own, or the console default.
        "calls_at_once": agent_cap(agent),
        "tokens": agent_tokens(agent),
        "invocations": agent_recent_invocations(agent),
        "can_edit": _may_edit(request, agent),
        "tool_names": sorted(c.name for c in tool_catalog()),
    }
    if _may_edit(request, agent):
        context.setdefault("form", AgentPermissionsForm.for_state(state))
        context.setdefault("explain_form", ExplainForm())
        context.setdefault("token_form", TokenForm())
        context["rotation_overlap_minutes"] = (
            settings.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_SECONDS // 60
        )
    context.update(extra)
    return context


@page_for(*READERS)
def agent_detail(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """One agent: level, autonomy, lists, overrides, workspace, tokens, recent calls."""
    agent = _agent_or_404(request, agent_id)
    return render(request, "agents/detail.html", _detail_context(request, agent))


@page_for(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """Preview (`action=preview`) or save an edit of the agent's permissions.

    A GET (a bookmarked or reloaded form address) goes to the editor on the agent's page.
    """
    agent = _agent_or_404(request, agent_id, edit=True)
    if request.method == "GET":
        return redirect(reverse("agent-detail", args=[agent.id]) + "#edit")
    form = AgentPermissionsForm(request.POST)
    if not form.is_valid() or form.state is None:
        context = _detail_context(request, agent, form=form)
        template = _template(request, "edit")
        return render(request, template, context, status=400)
    if request.POST.get("action") == "preview":
        effect = agent_permissions_effect(agent=agent, proposal=form.state)
        replay = agent_permissions_replay(agent=agent, proposal=form.state)
        context = _detail_context(request, agent, form=form, effect=effect, replay=replay)
        template = _template(request, "edit")
        return render(request, template, context)
    state = form.state
    effect = agent_permissions_update(
        agent=agent,
        actor=Actor.person(request.user),
        access_level=state.access_level,
        autonomy=state.autonomy,
        allowed=state.allowed,
        denied=state.denied,
        sub_constraints=state.sub_constraints,
        max_concurrent_calls=state.max_concurrent_calls,
    )
    if effect.changed:
        messages.success(request, f"Saved: {', '.join(effect.changed_fields)} changed.")
    else:
        messages.info(request, "Nothing changed.")
    if getattr(request, "htmx", False):
        # The form lives in a panel; after saving, the whole page shows the new state.
        return HttpResponseClientRedirect(reverse("agent-detail", args=[agent.id]))
    return redirect("agent-detail", agent_id=agent.id)


@page_for(Role.ADMIN)
@require_POST
def agent_explain_panel(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """The decision and trace for a hypothetical call; nothing runs and nothing is recorded."""
    agent = _agent_or_404(request, agent_id, edit=True)
    form = ExplainForm(request.POST)
    explanation = None
    problem = ""
    if form.is_valid():
        try:
            explanation = agent_explain(
                agent=agent,
                tool=form.cleaned_data["tool"],
                arguments=form.cleaned_data["arguments"],
            )
        except InvalidArgumentError as exc:
            problem = exc.message
    context = _detail_context(
        request, agent, explain_form=form, explanation=explanation, explain_problem=problem
    )
    status = 200 if explanation else 400
    template = _template(request, "explain")
    return render(request, template, context, status=status)

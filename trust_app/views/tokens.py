"""Agent token pages: admins issue (scopes, expiry), rotate and revoke an agent's tokens."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from audit_app.record import Actor
from common.errors import SynthOrgError
from common.page_access import page_for
from common.roles import Role
from trust_app.forms import TokenForm
from trust_app.models import Agent, AgentToken
from trust_app.services.tokens import (
    IssuedAgentToken,
    agent_token_issue,
    agent_token_revoke,
    agent_token_rotate,
)
from trust_app.tokens.shown_once import token_keep_for_showing, token_take_for_showing
from trust_app.views.agents import _agent_or_404


def _token_or_404(agent: Agent, token_id: uuid.UUID) -> AgentToken:
    token = AgentToken.objects.select_related("agent").filter(id=token_id, agent=agent).first()
    if token is None:
        raise Http404("no such token for this agent")
    return token


def _shown_once(request: HttpRequest, agent: Agent, issued: IssuedAgentToken) -> HttpResponse:
    """Keep the new plaintext for one GET and redirect there (POST-redirect-GET)."""
    token_keep_for_showing(
        request.session,
        agent_id=str(agent.id),
        token_id=str(issued.token.id),
        plaintext=issued.plaintext,
    )
    return redirect("agent-token-new", agent_id=agent.id, permanent=False)


@page_for(Role.ADMIN)
@require_GET
def agent_token_new(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """Show a just-issued token this once; a reload finds it gone and issues nothing."""
    agent = _agent_or_404(request, agent_id, edit=True)
    shown = token_take_for_showing(request.session, agent_id=str(agent.id))
    issued = None
    if shown is not None:
        issued = AgentToken.objects.filter(id=shown.token_id, agent=agent).first()
    response = render(
        request,
        "agents/token_created.html",
        {"agent": agent, "token": shown.plaintext if shown else None, "issued": issued},
    )
    response["Cache-Control"] = "no-store"
    return response


@page_for(Role.ADMIN)
@require_POST
def agent_token_create(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """Issue a token, then show its plaintext once on the page redirected to (digest stored)."""
    agent = _agent_or_404(request, agent_id, edit=True)
    form = TokenForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(
            f"{name}: {' '.join(str(e) for e in errs)}" for name, errs in form.errors.items()
        )
        messages.error(request, f"No token issued: {problems}")
        return redirect("agent-detail", agent_id=agent.id)
    days = form.cleaned_data["expires_in_days"]
    try:
        issued = agent_token_issue(
            agent=agent,
            actor=Actor.person(request.user),
            label=form.cleaned_data["label"],
            scopes=form.cleaned_data["scopes"] or None,
            expires_at=timezone.now() + timedelta(days=days) if days else None,
            never_expires=days == 0,
        )
    except SynthOrgError as exc:
        messages.error(request, f"No token issued: {exc.message}")
        return redirect("agent-detail", agent_id=agent.id)
    return _shown_once(request, agent, issued)


@page_for(Role.ADMIN)
@require_POST
def agent_token_rotate_view(
    request: HttpRequest, agent_id: uuid.UUID, token_id: uuid.UUID
) -> HttpResponse:
    """Issue the replacement (shown once); the old token keeps the overlap."""
    agent = _agent_or_404(request, agent_id, edit=True)
    token = _token_or_404(agent, token_id)
    try:
        issued = agent_token_rotate(token=token, actor=Actor.person(request.user))
    except SynthOrgError as exc:
        messages.error(request, exc.message)
        return redirect("agent-detail", agent_id=agent.id)
    return _shown_once(request, agent, issued)


@page_for(Role.ADMIN)
@require_POST
def agent_token_revoke_view(
    request: HttpRequest, agent_id: uuid.UUID, token_id: uuid.UUID
) -> HttpResponse:
    agent = _agent_or_404(request, agent_id, edit=True)
    token = _token_or_404(agent, token_id)
    if request.POST.get("confirm") != token.public_id:
        # The box naming the token is the confirmation, with or without JavaScript.
        messages.error(
            request,
            f"Token {token.public_id} was not revoked: tick the box that names it to confirm.",
        )
        return redirect("agent-detail", agent_id=agent.id)
    agent_token_revoke(token=token, actor=Actor.person(request.user))
    messages.success(request, f"Token {token.public_id} revoked.")
    return redirect("agent-detail", agent_id=agent.id)

"""The Desktop panel of an agent's page: its live desktop, and taking it over.

Operators and admins who see the agent watch the picture (refreshed every
``desktop.watch_seconds``); the agent's owner, and admins who may edit the agent,
take over, click on the picture, type, press keys and hand back. Auditors get no
agent pages, so no panel either.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from common.errors import ConflictError
from common.page_access import is_admin, page_for
from common.roles import Role
from common.settings_config import synthorg_config
from common.team_scope import READ_AGENTS
from tools_app.builtin.base import ToolRefusedError
from tools_app.selectors.desktop import desktop_holder, desktop_picture, desktop_view
from tools_app.services.desktop_control import (
    desktop_hand_back,
    desktop_person_act_send,
    desktop_take_over,
)
from tools_app.services.desktop_watch import desktop_capture_request
from trust_app.models import Agent
from trust_app.selectors.teams import agent_edit_refusal, agent_in_scope, person_scope

READERS = (Role.OPERATOR, Role.ADMIN)
TEMPLATE = "tools/desktop.html"
DESKTOP_OFF = "the desktop tools are off: the config has no 'desktop' section"


def _agent(request: HttpRequest, agent_id: uuid.UUID) -> Agent:
    agent = agent_in_scope(agent_id, person_scope(request.user, READ_AGENTS))
    if agent is None:
        raise Http404(f"no agent {agent_id} among your teams' agents")
    return agent


def may_take_over(request: HttpRequest, agent: Agent) -> bool:
    """The agent's owner, or an admin who may edit the agent."""
    if agent.owner_id is not None and agent.owner_id == request.user.pk:
        return True
    return is_admin(request) and not agent_edit_refusal(request.user, agent)


def _controller(request: HttpRequest, agent: Agent) -> None:
    if not may_take_over(request, agent):
        raise PermissionDenied(
            "only the agent's owner or an admin who may edit the agent takes over its desktop"
        )


def _panel(
    request: HttpRequest, agent: Agent, *, problem: str = "", status: int = 200
) -> HttpResponse:
    section = synthorg_config().desktop
    if section is None:
        # The category is off: the page keeps no panel (a refusal says why, as text).
        return HttpResponse(problem, status=status, content_type="text/plain; charset=utf-8")
    if request.method == "GET":
        desktop_capture_request(agent=agent)
    holder = desktop_holder(agent)
    context: dict[str, Any] = {
        "agent": agent,
        "view": desktop_view(agent),
        "holder": holder,
        "holds": holder is not None and holder.person_id == request.user.pk,
        "may_take_over": may_take_over(request, agent),
        "refresh_seconds": section.watch_seconds,
        "max_text_chars": section.max_text_chars,
        "problem": problem,
    }
    part = "live" if request.GET.get("part") == "live" else "panel"
    return render(request, f"{TEMPLATE}#{part}", context, status=status)


def _after_post(
    request: HttpRequest, agent: Agent, *, problem: str = "", status: int = 200
) -> HttpResponse:
    if getattr(request, "htmx", False):
        return _panel(request, agent, problem=problem, status=status)
    if problem:
        return _panel(request, agent, problem=problem, status=status)
    return redirect(reverse("agent-detail", args=[agent.id]) + "#desktop")


@page_for(*READERS)
@require_GET
def desktop_panel(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """The panel (or with ``?part=live`` its picture alone); asks for a fresh capture."""
    return _panel(request, _agent(request, agent_id))


@page_for(*READERS)
@require_GET
def desktop_picture_file(request: HttpRequest, agent_id: uuid.UUID, sha256: str) -> HttpResponse:
    """A kept picture of the desktop, by its SHA-256."""
    data = desktop_picture(_agent(request, agent_id), sha256)
    if data is None:
        raise Http404("no such picture of this desktop (pictures are kept a short while)")
    response = HttpResponse(data, content_type="image/png")
    # The same digest is the same picture: the browser may keep it, but only for this person.
    response["Cache-Control"] = "private, max-age=300"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@page_for(*READERS)
@require_POST
def desktop_take_over_view(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """Pause the agent's desktop calls: this person holds the desktop."""
    agent = _agent(request, agent_id)
    _controller(request, agent)
    if synthorg_config().desktop is None:
        return _after_post(request, agent, problem=DESKTOP_OFF, status=409)
    try:
        desktop_take_over(agent=agent, person=request.user)
    except ConflictError as exc:
        return _after_post(request, agent, problem=exc.message, status=409)
    return _after_post(request, agent)


@page_for(*READERS)
@require_POST
def desktop_hand_back_view(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """Give the desktop back to the agent (its holder, or anyone who may take it over)."""
    agent = _agent(request, agent_id)
    holder = desktop_holder(agent)
    if holder is None or holder.person_id != request.user.pk:
        _controller(request, agent)
    desktop_hand_back(agent=agent, person=request.user)
    return _after_post(request, agent)


def _integer(value: str | None) -> int | str | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return value  # refused by the check, with its reason


@page_for(*READERS)
@require_POST
def desktop_act_view(request: HttpRequest, agent_id: uuid.UUID) -> HttpResponse:
    """Click (on the picture: ``at.x``/``at.y``, or ``x``/``y``), type or press keys."""
    agent = _agent(request, agent_id)
    _controller(request, agent)
    data = request.POST
    fields: dict[str, Any] = {
        "action": data.get("action"),
        "x": _integer(data.get("at.x", data.get("x"))),
        "y": _integer(data.get("at.y", data.get("y"))),
        "button": data.get("button") or "left",
        "text": data.get("text"),
        "keys": data.get("keys"),
    }
    try:
        desktop_person_act_send(agent=agent, person=request.user, fields=fields)
    except ToolRefusedError as exc:
        return _after_post(request, agent, problem=exc.reason, status=400)
    except ConflictError as exc:
        return _after_post(request, agent, problem=exc.message, status=409)
    return _after_post(request, agent)

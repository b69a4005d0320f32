"""The secrets page (admins): names, versions, grants and last use; add, rotate,
revoke, grant. Values go in and never come out; a refusal is shown beside the
form the person used, with the page otherwise as it was."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from audit_app.record import Actor
from common.errors import SynthOrgError
from common.page_access import page_for
from common.roles import Role
from secrets_app.forms import SecretGrantForm, SecretRotateForm, SecretSetForm
from secrets_app.keyring import SecretValueUnreadableError
from secrets_app.selectors import secret_list
from secrets_app.services import (
    secret_grant,
    secret_revoke,
    secret_set,
    secret_ungrant,
    secrets_rotate_keys,
)
from trust_app.models import Agent

TEMPLATE = "secrets/list.html"


def _page(
    request: HttpRequest, *, status: int = 200, errors: dict[str, str] | None = None, **forms: Any
) -> HttpResponse:
    errors = errors or {}
    rows = [
        {
            "secret": row,
            "row_error": errors.get(f"row:{row.name}", ""),
            "rotate_error": errors.get(f"rotate:{row.name}", ""),
            "grant_error": errors.get(f"grant:{row.name}", ""),
        }
        for row in secret_list()
    ]
    context = {
        "rows": rows,
        "set_form": forms.get("set_form") or SecretSetForm(),
        "grant_form": SecretGrantForm(),
        "rotate_form": SecretRotateForm(),
        "add_error": errors.get("add", ""),
        "keys_error": errors.get("keys", ""),
    }
    return render(request, TEMPLATE, context, status=status)


def _refused(request: HttpRequest, where: str, message: str, **forms: Any) -> HttpResponse:
    return _page(request, status=400, errors={where: message}, **forms)


@page_for(Role.ADMIN, organisation_wide=True)
def secret_index(request: HttpRequest) -> HttpResponse:
    return _page(request)


@page_for(Role.ADMIN, organisation_wide=True)
@require_POST
def secret_add(request: HttpRequest) -> HttpResponse:
    form = SecretSetForm(request.POST)
    if not form.is_valid():
        return _refused(request, "add", "give a name and a value", set_form=form)
    try:
        version = secret_set(
            name=form.cleaned_data["name"].strip(),
            value=form.cleaned_data["value"],
            actor=Actor.person(request.user),
        )
    except SynthOrgError as exc:
        return _refused(
            request,
            "add",
            exc.message,
            set_form=SecretSetForm(initial={"name": form.cleaned_data["name"]}),
        )
    messages.success(request, f"stored {version.secret.name} version {version.number}")
    return redirect("secret-list")


@page_for(Role.ADMIN, organisation_wide=True)
@require_POST
def secret_rotate(request: HttpRequest, name: str) -> HttpResponse:
    form = SecretRotateForm(request.POST)
    if not form.is_valid():
        return _refused(request, f"rotate:{name}", "give the new value")
    try:
        version = secret_set(
            name=name, value=form.cleaned_data["value"], actor=Actor.person(request.user)
        )
    except SynthOrgError as exc:
        return _refused(request, f"rotate:{name}", exc.message)
    messages.success(request, f"stored {name} version {version.number}")
    return redirect("secret-list")


@page_for(Role.ADMIN, organisation_wide=True)
@require_POST
def secret_revoke_view(request: HttpRequest, name: str) -> HttpResponse:
    try:
        secret_revoke(name=name, actor=Actor.person(request.user))
    except SynthOrgError as exc:
        return _refused(request, f"row:{name}", exc.message)
    messages.success(request, f"revoked {name}: its values are erased and its grants removed")
    return redirect("secret-list")


@page_for(Role.ADMIN, organisation_wide=True)
@require_POST
def secret_grant_view(request: HttpRequest, name: str) -> HttpResponse:
    form = SecretGrantForm(request.POST)
    where = f"grant:{name}"
    if not form.is_valid():
        return _refused(request, where, "name an agent, and a tool or a server")
    agent_name = form.cleaned_data["agent"].strip()
    agent = Agent.objects.filter(name=agent_name).first() if agent_name else None
    if agent_name and agent is None:
        return _refused(request, where, f"no agent named {agent_name!r}")
    try:
        grant = secret_grant(
            name=name,
            agent=agent,
            tool=form.cleaned_data["tool"],
            server=form.cleaned_data["server"],
            hosts=form.host_list(),
            inject=form.cleaned_data["inject"],
            actor=Actor.person(request.user),
        )
    except SynthOrgError as exc:
        return _refused(request, where, exc.message)
    messages.success(request, f"{grant.holder} may use {name} with {grant.use}")
    return redirect("secret-list")


@page_for(Role.ADMIN, organisation_wide=True)
@require_POST
def secret_ungrant_view(request: HttpRequest, name: str) -> HttpResponse:
    agent_name = request.POST.get("agent", "")
    agent = Agent.objects.filter(name=agent_name).first() if agent_name else None
    if agent_name and agent is None:
        return _refused(request, f"grant:{name}", "no such agent")
    try:
        secret_ungrant(
            name=name,
            agent=agent,
            tool=request.POST.get("tool", ""),
            server=request.POST.get("server", ""),
            actor=Actor.person(request.user),
        )
    except SynthOrgError as exc:
        return _refused(request, f"grant:{name}", exc.message)
    holder = agent.name if agent is not None else "every agent"
    messages.success(request, f"{holder} may no longer use {name} there")
    return redirect("secret-list")


@page_for(Role.ADMIN, organisation_wide=True)
@require_POST
def secret_rotate_keys_view(request: HttpRequest) -> HttpResponse:
    try:
        done = secrets_rotate_keys(actor=Actor.person(request.user))
    except SynthOrgError as exc:
        return _refused(request, "keys", exc.message)
    except SecretValueUnreadableError as exc:
        return _refused(request, "keys", f"{exc}: nothing was changed")
    messages.success(request, f"re-encrypted {done['values']} value(s) under key {done['key_id']}")
    return redirect("secret-list")
